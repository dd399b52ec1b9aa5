# The two commands a newcomer needs are `make run` and `make test`.
GO      ?= go
BIN     := bin/switchboard
# Tests get Postgres from $DATABASE_URL, else 127.0.0.1:5432, else a
# throwaway cluster started from the installed PostgreSQL binaries.
WITH_PG := scripts/with-postgres
# The version stamped into the binary (switchboard --version): the nearest
# tag, commits since, the commit, and -dirty for uncommitted changes.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
STAMP   := -X main.version=$(VERSION)
# What make release builds.
PLATFORMS := linux/amd64 linux/arm64

.PHONY: run build release test fuzz bench lint generate check-generated clean

## run: build and start the service on the embedded SQLite default, with a demo account
run: build
	./$(BIN) serve --demo

build:
	$(GO) build -ldflags '$(STAMP)' -o $(BIN) ./cmd/switchboard

## release: static binaries (no cgo) for $(PLATFORMS) in dist/, stamped with $(VERSION), with SHA256SUMS
release:
	@mkdir -p dist
	@set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; out=dist/switchboard-$$os-$$arch; \
		echo "$$out $(VERSION)"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '-s -w $(STAMP)' -o $$out ./cmd/switchboard; \
	done
	cd dist && sha256sum switchboard-* > SHA256SUMS

## test: the whole suite with the race detector, SQLite and Postgres
# SQLite is C translated to Go (modernc.org): the race detector checks our
# code and every other dependency, but not SQLite's own translated C, as it
# would not check a cgo build of it. Instrumented, that C was three
# quarters of the CPU of the packages tested through SQLite.
RACE := -race -gcflags='modernc.org/...=-race=false'
# The end-to-end packages (tests, tests/browser, bench/queue) run one
# binary, built here once before them, rather than building three copies
# side by side (tests/e2ebinary).
E2E_BIN := bin/switchboard-e2e
# go test starts packages in the order they are named: the slowest go
# first, so that the longest (./tests, two and a half minutes) does not
# start last and run alone at the end.
SLOW_PACKAGES := ./tests ./tests/browser ./adapters/store ./application/cron ./adapters/edge/mcp ./adapters/edge/rest ./tests/graphql
# Three test binaries at once: most of their time is spent waiting on
# Postgres, servers and sockets, so two (one per CPU, the default) left
# the CPUs a third idle.
TEST_PACKAGES_AT_ONCE ?= 3
# Four tests at once per package: most tests wait on a database or a
# socket, so one per CPU (the default) leaves CPUs idle, while eight
# overload two CPUs with the end-to-end packages' servers and fail timing
# tests for no gain in time (measured in bench/RESULTS.md).
test:
	$(GO) build -ldflags '-X main.version=v0.0.0-e2e' -o $(E2E_BIN) ./cmd/switchboard
	SWITCHBOARD_TEST_BINARY=$(abspath $(E2E_BIN)) $(WITH_PG) $(GO) test $(RACE) -count=1 -p $(TEST_PACKAGES_AT_ONCE) -parallel 4 -timeout 20m $(SLOW_PACKAGES) ./...

## fuzz: each fuzz target in turn for $(FUZZTIME) (FUZZTIME=30s make fuzz); a crasher is saved in its package's testdata/fuzz
# Every parser of untrusted input has a fuzz target, listed here as
# package:target (tests/lint checks that the list names them all); make
# test runs their seed corpora.
FUZZTIME ?= 10m
FUZZ_TARGETS := \
	./adapters/cronexpr:FuzzNext \
	./application/messaging:FuzzMessageCursor \
	./graph:FuzzCursor \
	./graph:FuzzOperationBounds \
	./domain/messaging:FuzzPhoneNumber \
	./domain/email:FuzzAddress \
	./domain/email:FuzzHeaders \
	./adapters/email/mailparse:FuzzParse \
	./adapters/httpguard:FuzzCheckURL \
	./adapters/channels/whatsapp:FuzzWebhook \
	./adapters/channels/telegram:FuzzWebhook \
	./adapters/edge/mcp:FuzzToolArguments \
	./adapters/edge/rest:FuzzDecodeJSON
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; echo "$$name in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

## bench: ratios against same-run baselines (see bench/README.md); BENCH_FLAGS="-database postgres"
bench:
	$(WITH_PG) $(GO) run ./bench $(BENCH_FLAGS)

## lint: formatting, vet, staticcheck, the GraphQL schema and the docs' operations against the spec's rules, the docs' links
lint:
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	$(GO) test -count=1 ./tests/lint

## generate: regenerate gqlgen code; leaves a clean tree when it is current
generate:
	$(GO) generate ./...

check-generated: generate
	@git diff --exit-code -- graph gqlgen.yml || { echo "generated code is stale: run make generate and commit"; exit 1; }

clean:
	rm -rf bin var dist
