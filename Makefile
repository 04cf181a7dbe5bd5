# provider-cloudarmor
#
#   make run    local control plane + emulator + provider + examples, all Ready
#   make test   every test: generated files, lint, unit, integration (real
#               kube-apiserver + etcd + emulator), e2e
#
# Tools that are not Go modules of this repository (kube-apiserver, etcd,
# staticcheck) are built from pinned wrapper modules into $(CACHE_DIR), outside
# the checkout, once per version.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

export GONOSUMDB := github.com/crossplane/crossplane-tools
export GOFLAGS ?=

VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
CACHE_DIR  ?= $(or $(PROVIDER_CLOUDARMOR_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/provider-cloudarmor)
export PROVIDER_CLOUDARMOR_CACHE := $(CACHE_DIR)
OUTPUT_DIR := _output
BIN_DIR    := $(OUTPUT_DIR)/bin
LDFLAGS    := -s -w -X github.com/armorplane/provider-cloudarmor/internal/version.Version=$(VERSION)

KUBE_VERSION        := v1.35.4
ETCD_VERSION        := v3.6.6
STATICCHECK_VERSION := v0.7.0
CROSSPLANE_VERSION          := v2.5.0
CROSSPLANE_CORE_VERSION     := v2.4.0
FUNCTION_AUTO_READY_VERSION := v0.5.0
ARGOCD_VERSION              := v3.1.0
ENVTEST_ASSETS      := $(CACHE_DIR)/envtest-$(KUBE_VERSION)-etcd-$(ETCD_VERSION)
STATICCHECK         := $(CACHE_DIR)/bin/staticcheck-$(STATICCHECK_VERSION)/staticcheck
CROSSPLANE          := $(CACHE_DIR)/bin/crossplane-$(CROSSPLANE_VERSION)/crossplane
CROSSPLANE_CORE     := $(CACHE_DIR)/bin/crossplane-core-$(CROSSPLANE_CORE_VERSION)/crossplane-core
FUNCTION_AUTO_READY := $(CACHE_DIR)/bin/function-auto-ready-$(FUNCTION_AUTO_READY_VERSION)/function-auto-ready
ARGOCD              := $(CACHE_DIR)/bin/argocd-$(ARGOCD_VERSION)/argocd
KUBE_CONTROLLER_MANAGER := $(CACHE_DIR)/bin/kube-controller-manager-$(KUBE_VERSION)/kube-controller-manager
KUBECTL             := $(CACHE_DIR)/bin/kubectl-$(KUBE_VERSION)/kubectl
TOOL_ENV            := E2E_PROVIDER_BIN=$(abspath $(BIN_DIR))/provider KUBEBUILDER_ASSETS=$(abspath $(ENVTEST_ASSETS)) CROSSPLANE_BIN=$(CROSSPLANE) CROSSPLANE_CORE_BIN=$(CROSSPLANE_CORE) FUNCTION_AUTO_READY_BIN=$(FUNCTION_AUTO_READY) KUBECTL_BIN=$(KUBECTL) ARGOCD_BIN=$(ARGOCD)

# Test suites that drive separate processes rather than our code in-process.
PROCESS_SUITES := /test/(chaos|security|ha|xpkg|validate|render)$$
# Suites that run on the real node (root): the node's own tests boot theirs
# (their subject is its lifecycle); test/e2e, test/platform, test/tenancy,
# test/argocd and test/gitops need Crossplane and share one node that
# hack/shared-node.sh boots.
NODE_SUITES := /cluster/node$$|/test/(node|e2e|platform|tenancy|argocd|gitops)$$
FUZZTIME ?= 10s

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Build

.PHONY: build
build: ## Build the provider and emulator binaries into _output/bin.
	@mkdir -p $(BIN_DIR)
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN_DIR)/ ./cmd/...

.PHONY: generate
generate: ## Regenerate deepcopy, method sets, resolvers, CRDs and docs/reference.md.
	go generate -tags generate ./apis/... ./hack/crdref

.PHONY: check-generate
check-generate: generate ## Fail if generated files are not up to date.
	@if [ -n "$$(git status --porcelain -- apis package docs)" ]; then \
		echo "generated files are stale; run 'make generate' and commit:"; \
		git status --porcelain -- apis package docs; git diff --stat -- apis package docs; exit 1; fi

##@ Package

# hack/sign, its own module, built once per source (as hack/xpkg.sh names it).
SIGN := $(CACHE_DIR)/bin/sign-$(shell cd hack/sign && LC_ALL=C ls go.mod go.sum *.go | grep -v '_test\.go$$' | xargs cat | sha256sum | cut -c1-12)/sign

.PHONY: xpkg
xpkg: $(CROSSPLANE) $(SIGN) ## Build the provider, function and configuration packages into _output/xpkg (no Docker), with SBOMs and signatures (COSIGN_PRIVATE_KEY, else the test key).
	VERSION=$(VERSION) CROSSPLANE=$(CROSSPLANE) SIGN=$(SIGN) hack/xpkg.sh

# The previous release's packages, for the upgrade-in-place test (test/node
# TestUpgrade): built once per release into $(CACHE_DIR)/xpkg-<commit>/ by
# hack/xpkg-previous.sh, which names the release.
.PHONY: xpkg-previous
xpkg-previous: $(CROSSPLANE) $(SIGN)
	CROSSPLANE=$(CROSSPLANE) SIGN=$(SIGN) hack/xpkg-previous.sh >/dev/null

# Its tests (an in-process registry, and the crossplane CLI pushing what it
# signed) run before it is built, once per source.
$(SIGN): $(CROSSPLANE)
	@echo ">> testing and building hack/sign (first time for this source)"
	cd hack/sign && CROSSPLANE_BIN=$(CROSSPLANE) go test -count=1 ./... && CGO_ENABLED=0 go build -trimpath -o $@ .

##@ Tools

.PHONY: tools
tools: ## Build kube-apiserver, kube-controller-manager, kubectl, etcd, staticcheck, the crossplane CLI and core, function-auto-ready, Argo CD, the package signer and the real node's tools (cached).
	@# In parallel: on a cold machine the module downloads and links overlap.
	@# hack/sign too: built (and tested) alone by the first `make xpkg` it took
	@# 5 min of a cold make test on 2026-11-27.
	@# Measured with `make run`'s seven tools: 16.5 min cold in all at nice 19
	@# beside a benchmark, the longest (the crossplane CLI) 13 min of it.
	@hack/progress.sh $(MAKE) --no-print-directory -j4 $(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/etcd $(STATICCHECK) $(CROSSPLANE) $(CROSSPLANE_CORE) $(FUNCTION_AUTO_READY) $(KUBE_CONTROLLER_MANAGER) $(KUBECTL) $(ARGOCD) gitops-deps \
		node-tool-kube-node node-tool-coredns node-tool-helm node-tool-node-debs $(SIGN)

$(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/etcd:
	cluster/toolchain/build.sh assets >/dev/null

$(CROSSPLANE):
	cluster/toolchain/build.sh crossplane >/dev/null

$(CROSSPLANE_CORE):
	cluster/toolchain/build.sh crossplane-core >/dev/null

$(FUNCTION_AUTO_READY):
	cluster/toolchain/build.sh function-auto-ready >/dev/null

$(ARGOCD):
	cluster/toolchain/build.sh argocd >/dev/null

# The gitops suite runs Debian's redis-server (Argo CD's cache) and serves a
# repository with git daemon. Like hack/xpkg.sh with ca-certificates, install
# them when missing and we are root with apt-get (CI's case); otherwise say what
# to install rather than skip the suite.
.PHONY: gitops-deps
gitops-deps:
	@pkgs=; command -v redis-server >/dev/null || pkgs="$$pkgs redis-server"; \
	command -v git >/dev/null || pkgs="$$pkgs git"; \
	if [ -z "$$pkgs" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
		echo "missing:$$pkgs (Debian packages the gitops suite needs; install them)" >&2; exit 1; fi; \
	echo ">> apt-get install$$pkgs" >&2; \
	apt-get install -y --no-install-recommends $$pkgs >/dev/null || \
		{ apt-get update >/dev/null && apt-get install -y --no-install-recommends $$pkgs >/dev/null; }

$(KUBE_CONTROLLER_MANAGER):
	cluster/toolchain/build.sh kube-controller-manager >/dev/null

$(KUBECTL):
	cluster/toolchain/build.sh kubectl >/dev/null

$(STATICCHECK):
	@echo ">> building staticcheck $(STATICCHECK_VERSION) (first time only)"
	cd hack/staticcheck && go build -o $@ honnef.co/go/tools/cmd/staticcheck

##@ Test

.PHONY: lint
lint: $(STATICCHECK) ## gofmt, go vet and staticcheck.
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi
	go vet ./...
	go vet -tags bench ./test/bench/...
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags bench ./test/bench/...

.PHONY: unit
unit: ## Unit tests only (no control plane).
	go test -race -count=1 -short ./...

.PHONY: test
test: tools check-generate lint build xpkg ## Every test: generated files, lint, unit, integration, e2e, and on a real node (root) Crossplane from Helm with our packages.
	@# Everything that runs our code in-process runs under the race detector.
	@# The suites that drive separate processes (the provider binary, the
	@# crossplane CLI) gain nothing from instrumenting their harness, and it
	@# would only slow a cold CI run.
	$(TOOL_ENV) go test -race -count=1 -timeout 20m $$(go list ./... | grep -Ev '$(PROCESS_SUITES)|$(NODE_SUITES)')
	$(TOOL_ENV) go test -count=1 -timeout 30m $$(go list ./... | grep -E '$(PROCESS_SUITES)')
	$(MAKE) --no-print-directory node-suites
	# A count, not a duration: with a duration Go's fuzz coordinator fails
	# with "context deadline exceeded" (0 execs/s) when a loaded 2-core
	# machine starves its workers (go.dev/issue/75804, fixed in Go 1.27).
	$(MAKE) fuzz FUZZTIME=500x
	@echo "make test: all suites passed"

# Opt-in: creates, checks and deletes real Cloud Armor policies (billed by the
# hour while they exist); docs/development.md says what it needs and costs.
.PHONY: test-gcp
test-gcp: $(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/etcd build ## e2e against a real GCP project: E2E_GCP_PROJECT plus E2E_GCP_CREDENTIALS (JSON file) or E2E_GCP_ACCESS_TOKEN.
	@if [ -z "$${E2E_GCP_PROJECT:-}" ]; then echo "make test-gcp: set E2E_GCP_PROJECT and E2E_GCP_CREDENTIALS or E2E_GCP_ACCESS_TOKEN (docs/development.md)"; exit 2; fi
	$(TOOL_ENV) go test -count=1 -timeout 60m -v -run '^TestGCP$$' ./test/e2e/

##@ Bench

.PHONY: bench
bench: tools build xpkg ## Ours against the null provider (the floor), the growth curve, remote sources (heap per remote cluster and per 1,000 remote Nodes, CPU at the kubelets' report rate, Compute calls per poll; 100 simulated remote clusters of 1,000 GKE Nodes: peak RSS and CPU per 1,000 remote Nodes), node-change latency and the IPAllowlist with 1,000 and 5,000 Nodes (test/platform), targets; BENCH_ARGS='-policies 10 -rules 100 -growth=false -platform=false'.
	CGO_ENABLED=0 go build -tags bench -trimpath -ldflags '$(LDFLAGS)' -o $(BIN_DIR)/nullprovider ./test/bench/nullprovider
	$(TOOL_ENV) go run -tags bench ./test/bench --bin-dir $(BIN_DIR) --out $(OUTPUT_DIR) $(BENCH_ARGS)

.PHONY: chaos
chaos: tools build ## Long chaos run: 10 policies x 50 rules, 20% faults, SIGKILL every 30 s; prints a summary table.
	$(TOOL_ENV) CHAOS_LONG=1 go test -count=1 -timeout 30m -v -run 'TestChaos$$|TestAllowlistSafety' ./test/chaos/

.PHONY: fuzz
fuzz: ## Run each fuzz target briefly (FUZZTIME=10s, or a count of inputs such as 500x).
	@for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
		for f in $$(grep -h '^func Fuzz' $$dir/*_test.go | sed 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
			echo ">> fuzz $$dir $$f"; go test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$dir || exit 1; \
		done; done

##@ Run

# `make run KUBECONFIG=… REGISTRY=…` installs into a cluster you already have
# instead of booting a node: every image is pushed to REGISTRY (host[:port],
# anonymous pushes; PUSH_REGISTRY when this host reaches it by another name,
# PLAIN_HTTP=1 for an HTTP registry), and Ctrl-C removes all it installed.
# Both must be on the command line: a KUBECONFIG in the environment alone
# does not switch.
ifeq ($(origin KUBECONFIG),command line)
RUN_ARGS += --kubeconfig $(abspath $(KUBECONFIG)) --registry $(REGISTRY) $(if $(PUSH_REGISTRY),--push-registry $(PUSH_REGISTRY)) $(if $(PLAIN_HTTP),--plain-http)
endif

.PHONY: run
run: run-tools build ## Boot a real node (root), install Crossplane by Helm and our packages by `crossplane xpkg install`, apply the examples, wait for Ready; Ctrl-C tears down. With KUBECONFIG=… REGISTRY=…: into your cluster.
	@echo ">> packaging for the node (linux/amd64)"
	@PLATFORMS=linux/amd64 $(MAKE) --no-print-directory xpkg >/dev/null
	go build -o $(BIN_DIR)/local ./cluster/local
	$(TOOL_ENV) exec $(BIN_DIR)/local --bin-dir $(BIN_DIR) $(RUN_ARGS)

# The tools `make run` needs, built in parallel so that on a cold machine their
# module downloads and links overlap. hack/progress.sh says once a minute
# which are still being built and for how long: they were most of the
# 43.9 min a first `make run` took on a fresh 2-core machine (2026-11-28).
.PHONY: run-tools
run-tools:
	@hack/progress.sh $(MAKE) --no-print-directory -j4 $(NODE_TOOLS) $(CROSSPLANE) $(FUNCTION_AUTO_READY)

##@ Node

# The real node (cluster/node): kubelet, kube-scheduler and kube-proxy from the
# kube-apiserver wrapper module, a trimmed CoreDNS, helm, and containerd, runc,
# the CNI plugins and iptables from pinned Debian packages (extracted, not
# installed), besides what `make tools` builds for the control plane.
NODE_TOOLS := node-tool-kube-node node-tool-coredns node-tool-helm node-tool-node-debs \
	node-tool-kube-apiserver node-tool-kube-controller-manager node-tool-kubectl node-tool-etcd node-tool-crossplane-core

.PHONY: node-tools
node-tools: ## Build or fetch everything the real node runs (cached; cluster/toolchain/build.sh).
	@hack/progress.sh $(MAKE) --no-print-directory -j4 $(NODE_TOOLS)

.PHONY: $(NODE_TOOLS)
$(NODE_TOOLS): node-tool-%:
	cluster/toolchain/build.sh $* >/dev/null

# The real node's suites (part of `make test`, root only). First the node's
# own tests, each booting and tearing down a node of its own (TestNode checks
# the no-egress configuration and compares the host before and after,
# TestCrashRecovery kills one, TestPackages installs as README.md says and
# checks the grants, TestUpgrade upgrades the previous release in place,
# from xpkg-previous's packages, while it samples GCP, TestMoveToDerivedName
# moves it from the name provider-cloudarmor to the derived one); then one shared node (hack/shared-node.sh) for the
# suites that need Crossplane. The node is linux/amd64 only.
.PHONY: node-suites
node-suites: $(CROSSPLANE) $(FUNCTION_AUTO_READY) xpkg-previous
	@if [ "$$(id -u)" != 0 ]; then echo "make test boots a real node (namespaces, mounts, containerd, a bridge) and needs root: run it as root" >&2; exit 1; fi
	go build -o $(BIN_DIR)/local ./cluster/local
	LOCAL=$(abspath $(BIN_DIR))/local NODE_TEST=1 NODE_DEBS=$$(cluster/toolchain/build.sh node-debs) $(TOOL_ENV) go test -p 1 -count=1 -timeout 30m ./cluster/node/ ./test/node/
	LOCAL=$(abspath $(BIN_DIR))/local $(TOOL_ENV) hack/shared-node.sh go test -p 1 -count=1 -timeout 45m ./test/e2e/ ./test/platform/ ./test/tenancy/ ./test/argocd/ ./test/gitops/

# Only the node's suites, for work on them (root): builds what they need.
# Its packages and emulator go under $(NODE_OUT), not _output/xpkg and
# _output/bin, which a make test running meanwhile reads.
.PHONY: node-test
NODE_OUT := $(OUTPUT_DIR)/node
node-test: node-tools $(CROSSPLANE) $(FUNCTION_AUTO_READY) xpkg-previous ## Boot the real node, install Crossplane by Helm and our packages by xpkg, check them, run test/platform and test/argocd on it, tear down (root).
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $(NODE_OUT)/bin/ ./cmd/emulator ./cmd/changelogs-sidecar
	VERSION=$(VERSION) CROSSPLANE=$(CROSSPLANE) PLATFORMS=linux/amd64 XPKG_OUT=$(NODE_OUT)/xpkg XPKG_IMAGES=$(NODE_OUT)/images hack/xpkg.sh >/dev/null
	NODE_TEST=1 NODE_DEBS=$$(cluster/toolchain/build.sh node-debs) CROSSPLANE_BIN=$(CROSSPLANE) FUNCTION_AUTO_READY_BIN=$(FUNCTION_AUTO_READY) \
		NODE_XPKG_DIR=$(abspath $(NODE_OUT))/xpkg NODE_BIN_DIR=$(abspath $(NODE_OUT))/bin NODE_EMULATOR_BIN=$(abspath $(NODE_OUT))/bin/emulator \
		NODE_CHANGELOGS_BIN=$(abspath $(NODE_OUT))/bin/changelogs-sidecar \
		go test -p 1 -count=1 -timeout 30m -v ./cluster/node/ ./test/node/ $(NODE_TEST_ARGS)
	BIN_DIR=$(NODE_OUT)/bin XPKG_DIR=$(NODE_OUT)/xpkg CROSSPLANE_BIN=$(CROSSPLANE) FUNCTION_AUTO_READY_BIN=$(FUNCTION_AUTO_READY) \
		hack/shared-node.sh go test -p 1 -count=1 -timeout 30m -v ./test/platform/ ./test/tenancy/ ./test/argocd/ $(NODE_TEST_ARGS)

.PHONY: clean
clean: ## Remove build output (not the tool cache).
	rm -rf $(OUTPUT_DIR)
