# Millwright's interface for people and CI. Every tool it needs is built
# from pinned sources into bin/ by hack/tools/build.sh; nothing is assumed
# to be installed beyond Go.

SHELL := /usr/bin/env bash -o pipefail
BIN := $(CURDIR)/bin
export BIN_DIR := $(BIN)
# envtest (controller-runtime) finds kube-apiserver, etcd and kubectl here.
export KUBEBUILDER_ASSETS := $(BIN)

CONTROLLER_GEN := $(BIN)/controller-gen
STATICCHECK := $(BIN)/staticcheck
GO_TEST_FLAGS ?= -count=1 -timeout=60m

.PHONY: all tools generate build lint test e2e bench bench-vm help demo

all: build

help: ## Show the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

tools: ## Build the pinned external binaries into bin/, and install QEMU and libvirt (cached: a second run does no work).
	@bash hack/tools/build.sh
	@bash hack/tools/libvirt.sh

$(CONTROLLER_GEN) $(STATICCHECK):
	@bash hack/tools/build.sh $(notdir $@)

# The generators hack/generate.sh runs; build.sh rebuilds one only when its
# pin changed, so this costs nothing once they are built.
GENERATORS := controller-gen buf protoc-gen-go protoc-gen-go-grpc

generate: ## Regenerate deepcopy code, CRDs and RBAC from the Go markers, and the driver protocol's Go code from its .proto.
	@bash hack/tools/build.sh $(GENERATORS)
	bash hack/generate.sh

build: ## Compile every package, and the commands into bin/.
	go build ./...
	go build -o $(BIN)/ ./cmd/...

lint: $(STATICCHECK) ## gofmt, go vet, staticcheck and go mod tidy must all be clean.
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	go vet ./...
	$(STATICCHECK) ./...
	go mod tidy -diff

# test/e2e runs whole clusters of processes: it runs alone, after the
# other packages, so that its timings are not squeezed by theirs.
E2E_PKG := ./test/e2e/...
UNIT_PKGS = $$(go list ./... | grep -v '/test/e2e')

test: tools lint ## Build the tools if missing, lint, and run every test: unit, envtest, then end to end.
	go test $(GO_TEST_FLAGS) $(UNIT_PKGS)
	$(MAKE) e2e

e2e: tools build ## The end-to-end scenarios on a local cluster (etcd, kube-apiserver, KCM, scheduler, kwok, sim, manager).
	go test -count=1 -timeout=45m -p 1 -v $(E2E_PKG)

bench: tools build ## The scale benchmark (N=1000 machines by default; N=5000 allowed): JSON lines and a table.
	go run ./test/bench -n $(or $(N),1000)

bench-vm: tools build ## Real VMs (libvirt, TCG, as root): create → Running p50/p95, CPU seconds and RSS per VM, for 1 and 4 VMs at once (VM_BENCH_SIZES=1,5 to change).
	go test -count=1 -run '^$$' -bench BenchmarkVMCreateToRunning -benchtime=$(or $(BENCHTIME),3x) -timeout=60m ./test/e2e/

demo: tools build ## Run Millwright on a local cluster with the simulated cloud (PROVIDER=libvirt: real VMs; DEMO_EXIT=1: exit once Running).
	$(BIN)/millwright-demo --provider $(or $(PROVIDER),sim)
