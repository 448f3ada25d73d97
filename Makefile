# wick: the README's commands. CMake does the building; this file names the steps.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
MODEL := models/SmolLM2-135M-Instruct.Q4_1.gguf
PROMPT ?= What is Rust?

.PHONY: all build run test test-c test-py test-sanitize model venv install clean format

all: build

build:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

model: $(MODEL)
$(MODEL):
	@scripts/fetch-model.sh

venv:
	@scripts/setup-venv.sh

# Build, fetch the default model if needed, and answer a question in chat mode.
run: build model
	$(BUILD)/wick run -m $(MODEL) --chat -p "$(PROMPT)" -n 64

# Build and run every test: the C tests (ctest) and the Python reference checks.
test: build model venv test-c test-py

test-c:
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-py:
	@for t in tests/py/test_*.py; do \
	    [ -f "$$t" ] || continue; \
	    echo "== $$t"; \
	    WICK_BIN=$(BUILD)/wick WICK_LIB=$(BUILD)/libwick.so WICK_SOURCE_DIR=$(CURDIR) WICK_TEST_MODEL=$(MODEL) .venv/bin/python "$$t" || exit 1; \
	done

# The whole suite under AddressSanitizer and UndefinedBehaviorSanitizer.
test-sanitize: model
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DWICK_SANITIZE=ON -DWICK_CUDA=OFF >/dev/null
	@cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    ctest --output-on-failure -j $(JOBS)

install: build
	cmake --install $(BUILD) $(if $(PREFIX),--prefix $(PREFIX),)

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cu' '*.cuh')

clean:
	rm -rf $(BUILD) build-asan
