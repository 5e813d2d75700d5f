# One entry point for build, test and bench (bin/hrdma wraps the same steps).
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
NATIVE_BUILD := java/hrdma-native/target/native-build
ASAN_BUILD := build/native-asan

.PHONY: all setup build test check-links java-test native-test asan bench fuzz docker-test spark-test clean docs test-hdfs-full test-hdfs-stock

all: build

setup:
	bin/setup

build: setup
	mvn -B -q -DskipTests package

# The tree check (no tracked symlink leaving the repository), every Java test (the
# native CMake build runs inside it), then the native tests of that build, then an
# AddressSanitizer build of native/ and its tests.
# Prints the surefire and ctest summaries; fails on the first failing step.
test: setup check-links java-test native-test asan

check-links:
	@echo "== tracked symlinks"
	bin/check-symlinks-test
	bin/check-symlinks

# -T 2: the modules after hrdma-client (Hadoop's HDFS tests; tools, then the benchmarks) build
# side by side; hrdma-client's tests and Hadoop's HDFS tests run two classes at a time (two
# JVMs, directories of their own), the other modules' one at a time.
java-test:
	@rc=0; mkdir -p build; mvn -B -T 2 verify > build/mvn-verify.log 2>&1 || rc=$$?; \
	echo "== surefire (full log: build/mvn-verify.log)"; \
	grep -E 'Tests run:|FAIL|ERROR\]|BUILD (SUCCESS|FAILURE)|Reactor Summary|SUCCESS \[|FAILURE \[|SKIPPED' \
	  build/mvn-verify.log | grep -v -- '-- in ' | tail -40 || true; \
	exit $$rc

native-test:
	@echo "== ctest $(NATIVE_BUILD)"
	ctest --test-dir $(NATIVE_BUILD) --output-on-failure

asan:
	@echo "== AddressSanitizer build $(ASAN_BUILD)"
	cmake -S native -B $(ASAN_BUILD) -DHRDMA_ASAN=ON > /dev/null
	cmake --build $(ASAN_BUILD) -j 2 > /dev/null
	ctest --test-dir $(ASAN_BUILD) --output-on-failure

# Regenerates docs/configuration.md from hrdma-default.xml (ConfigurationRegistryTest
# fails while it is stale).
docs:
	mvn -B -q install -DskipTests -pl java/hrdma-tools -am
	mvn -B test -pl java/hrdma-tools -Dtest=ConfigurationRegistryTest -Dhrdma.docs.write=true

# Hadoop's HDFS tests through our client (docs/hdfs-tests.md). The fast
# selection runs in `make test` (java-test); these run the slow classes, and
# the whole selection on the stock client with our keys off.
HDFS_TESTS := mvn -B verify -pl java/hrdma-hdfs-tests
test-hdfs-full: setup
	mvn -B -q install -DskipTests -pl java/hrdma-hdfs-tests -am
	$(HDFS_TESTS) -Phdfs-slow

test-hdfs-stock: setup
	mvn -B -q install -DskipTests -pl java/hrdma-hdfs-tests -am
	$(HDFS_TESTS) -Phdfs-stock -Dhdfs.tests.selection=all -Dhdfs.tests.class-timeout=1800

bench: build
	bin/hrdma perf --compare

# Coverage-guided fuzzing of the decoders of peer bytes (docs/fuzzing.md), a target at a time.
FUZZ_SECONDS ?= 120
fuzz:
	bin/hrdma fuzz --seconds $(FUZZ_SECONDS)

# Separate from test: each needs more than the build (docker-test: dockerd, a base image and
# three images built from Debian and Maven Central; spark-test: PySpark from PyPI) and runs
# for minutes on its own (docs/docker.md, docs/install.md).
docker-test:
	docker/test.sh

spark-test:
	java/hrdma-dist/src/spark-test/run.sh

clean:
	mvn -B -q clean
	rm -rf build
