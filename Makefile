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

.PHONY: all tools runtime-tools vm-tools cloud-image kubelet-image generate build image lint test e2e e2e-cloud-image e2e-real-kubelet e2e-real-kubelet-fleet bench bench-vm bench-aws chaos help demo

all: build

help: ## Show the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

tools: ## Build the pinned external binaries into bin/, and install QEMU and libvirt (cached: a second run does no work).
	@bash hack/tools/libvirt.sh
	@bash hack/tools/build.sh

$(CONTROLLER_GEN) $(STATICCHECK):
	@bash hack/tools/build.sh $(notdir $@)

# The binaries a running cluster needs: what the demo, the end-to-end
# scenarios and the benchmark run (kubectl for the commands the demo
# prints). Generators and linters are built by the targets that use them.
RUNTIME_TOOLS := etcd kube-apiserver kube-controller-manager kube-scheduler kwok kubectl

runtime-tools: ## Build only the binaries a local cluster runs (what demo, e2e and bench need).
	@bash hack/tools/build.sh $(RUNTIME_TOOLS)

vm-tools: ## Install QEMU and libvirt when missing, and build the VMs' kernel and initramfs into bin/vm/ (what e2e, bench-vm and the libvirt demo need).
	@bash hack/tools/libvirt.sh
	@bash hack/tools/build.sh vm

# Not in tools, test or e2e: a Debian image (a 440 MiB qcow2), built by
# debootstrap as root (docs/providers/libvirt.md, "Booting a cloud image").
cloud-image: ## As root: build a Debian cloud image (systemd, cloud-init, the node agent as a service) into bin/cloudimage/ (cached).
	@bash hack/tools/cloudimage.sh

# Its sibling with the real kubelet (compiled from the pinned Kubernetes
# module, minutes), containerd (compiled from its pinned module), Debian's
# runc and CNI plugins, and local pause and workload images
# (docs/providers/node-images.md). Not in tools, test or e2e either.
kubelet-image: ## As root: build the kubelet node image (the cloud image with the kubelet, containerd, a bridge CNI network and local images) into bin/kubeletimage/ (cached).
	@bash hack/tools/cloudimage.sh kubelet

# The generators hack/generate.sh runs; build.sh rebuilds one only when its
# pin changed, so this costs nothing once they are built.
GENERATORS := controller-gen buf protoc-gen-go protoc-gen-go-grpc

generate: ## Regenerate deepcopy code, CRDs and RBAC from the Go markers, the driver protocol's Go code from its .proto, the flags and metrics references, the Grafana dashboard and the pictures.
	@bash hack/tools/build.sh $(GENERATORS)
	bash hack/generate.sh

build: ## Compile every package, and the commands into bin/.
	go build ./...
	go build -o $(BIN)/ ./cmd/...

# No container engine: hack/image compiles static binaries and assembles
# them with go-containerregistry; push with `crane push _output/image REF`.
IMAGE_DIR ?= $(CURDIR)/_output/image

image: ## Build the OCI image (manager, sim, libvirt and aws drivers, kubectl-millwright; non-root, empty base) as an OCI layout in _output/image.
	go run ./hack/image -out $(IMAGE_DIR)

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

# The unit and envtest packages run with the race detector: measured on a
# shared 2-core machine with a warm build cache, it added 16% (416 s to
# 481 s for all of them, one package at a time).
test: tools lint ## Build the tools if missing, lint, and run every test: unit and envtest (with -race), then end to end.
	go test -race $(GO_TEST_FLAGS) $(UNIT_PKGS)
	$(MAKE) e2e

e2e: runtime-tools vm-tools build ## The end-to-end scenarios on a local cluster (etcd, kube-apiserver, KCM, scheduler, kwok, sim, manager).
	go test -count=1 -timeout=45m -p 1 -v $(E2E_PKG)

# The build tag keeps TestVMCloudImage out of `make test` and `make e2e`.
e2e-cloud-image: runtime-tools vm-tools cloud-image build ## As root: boot the cloud image as a libvirt Machine that joins from the NoCloud seed (TestVMCloudImage, about a minute under TCG).
	go test -tags cloudimage -count=1 -timeout=45m -p 1 -v -run '^TestVMCloudImage$$' $(E2E_PKG)

# The build tag keeps TestVMRealKubelet out of `make test` and `make e2e`.
e2e-real-kubelet: runtime-tools vm-tools kubelet-image build ## As root: a libvirt Machine of the kubelet image joins through the real kubelet's TLS bootstrap, runs a pod and is drained (TestVMRealKubelet).
	go test -tags realkubelet -count=1 -timeout=45m -p 1 -v -run '^TestVMRealKubelet$$' $(E2E_PKG)

e2e-real-kubelet-fleet: runtime-tools vm-tools kubelet-image build ## As root: 2 real-kubelet VMs run 3 pods under a PodDisruptionBudget; a rollout drains them with the budget kept at every event, a killed VM is replaced; create → Node Ready and drain figures (TestVMRealKubeletFleet, an hour or more under TCG on 2 cores).
	go test -tags realkubelet -count=1 -timeout=240m -p 1 -v -run '^TestVMRealKubeletFleet$$' $(E2E_PKG)

bench: runtime-tools build ## The scale benchmark (N=1000 machines by default; N=5000 allowed): JSON lines and a table.
	go run ./test/bench -n $(or $(N),1000)

bench-vm: runtime-tools vm-tools build ## Real VMs (libvirt, TCG, as root): create → Running p50/p95, CPU seconds and RSS per VM, for 1 and 4 VMs at once (VM_BENCH_SIZES=1,5 to change).
	go test -count=1 -run '^$$' -bench BenchmarkVMCreateToRunning -benchtime=$(or $(BENCHTIME),3x) -timeout=60m ./test/e2e/

bench-aws: runtime-tools build ## The manager with millwright-aws against moto, N=200 Machines (AWS_BENCH_N to change; AWS_BENCH_MANAGER_ARGS for manager flags): seconds and instances/s created and terminated, driver calls and RunInstances/DescribeInstances/TerminateInstances calls per Machine.
	go test -count=1 -p 1 -run '^$$' -bench BenchmarkAWSFleet -benchtime=1x -timeout=30m ./test/e2e/

CHAOS_DURATION ?= 10m
CHAOS_TARGET ?= sim
chaos: runtime-tools build ## Seeded chaos for CHAOS_DURATION (10m): managers, driver and kube-apiserver killed and paused under a changing fleet, invariants at every event, a summary at the end (CHAOS_SEED replays a run; CHAOS_TARGET=sim, aws or sim,aws; docs/reliability.md).
	CHAOS_DURATION=$(CHAOS_DURATION) CHAOS_TARGET=$(CHAOS_TARGET) CHAOS_SEED=$(CHAOS_SEED) go test -count=1 -timeout=0 -p 1 -v -run '^TestChaos$$' $(E2E_PKG)

demo: runtime-tools $(if $(filter libvirt,$(PROVIDER)),vm-tools) build ## Run Millwright on a local cluster with the simulated cloud (PROVIDER=libvirt: real VMs; PROVIDER=aws: the EC2 driver against a local moto_server; DEMO_EXIT=1: exit once Running).
	$(BIN)/millwright-demo --provider $(or $(PROVIDER),sim)
