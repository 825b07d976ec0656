# ccm: one cloud-controller-manager binary, providers chosen by build tags.
# The provider list is the set of cmd/ccm/provider_*.go files: add one and every target sees it.
SHELL := /usr/bin/env bash
PROVIDERS := $(sort $(patsubst cmd/ccm/provider_%.go,%,$(wildcard cmd/ccm/provider_*.go)))
comma := ,
empty :=
space := $(empty) $(empty)
ALL_TAGS := $(subst $(space),$(comma),$(PROVIDERS))

# ccm's version, a semantic version from git tags (build/version.sh), and the link flags that
# stamp it (build/ldflags.sh).
VERSION ?= $(shell bash build/version.sh)
LDFLAGS := $(shell VERSION=$(VERSION) bash build/ldflags.sh)
ifeq ($(LDFLAGS),)
$(error build/ldflags.sh printed no link flags)
endif
GOBUILD := CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)"
PROVIDER ?= dummy
FUZZTIME ?= 10s

.PHONY: release helm-test faults faults-short flags-doc image images image-test bench bench-dummy bench-scale all build $(addprefix build-,$(PROVIDERS)) testbin test unit integration fuzz verify demo clean help realstack realstack-stop realstack-status realstack-test

all: build

help:
	@echo "make demo        local control plane + ccm (dummy) + sample Nodes and Services (DEMO_ONCE=1 to exit)"
	@echo "make test        unit, fuzz and integration tests (builds the test control plane once)"
	@echo "make build       bin/ccm with every provider: $(PROVIDERS)"
	@echo "make build-NAME  bin/ccm-NAME with one provider"
	@echo "make verify      gofmt, vet and build of every tag combination, tidy modules, tag rules, function length"
	@echo "make faults      fault scenarios for every provider (make test runs them with --short)"
	@echo "make bench       figures for every provider on the local control plane and its simulator"
	@echo "make bench-scale the service controller at 10,000 load balancers (SCALE_ARGS=--services=2000 for a quick run)"
	@echo "make release     images (amd64+arm64), SBOMs, charts pinned by digest, pushed to RELEASE_REGISTRY (docs/releasing.md)"
	@echo "make realstack   real OpenStack (Debian packages) on 127.0.0.1 for the openstack provider: bin/realstack/{cloud.conf,ids.env}"
	@echo "make realstack-stop / realstack-status   stop it / PIDs and memory of its services (build/realstack/README.md)"
	@echo "make realstack-test  the openstack provider's conformance suite and update tests against those services"

build:
	$(GOBUILD) -tags "$(ALL_TAGS)" -o bin/ccm ./cmd/ccm

$(addprefix build-,$(PROVIDERS)): build-%:
	$(GOBUILD) -tags $* -o bin/ccm-$* ./cmd/ccm

testbin:
	@bash build/testbin.sh

# Provider modules keep their integration tests (real apiserver + simulator) in
# providers/NAME/integration; `make integration` runs those, `make unit` the rest.
PROVIDER_DIRS := $(sort $(patsubst %/go.mod,%,$(wildcard providers/*/go.mod)))
INTEGRATION_PKGS := ./test/integration/... $(addprefix ./,$(sort $(wildcard providers/*/integration)))

unit:
	go test -count=1 $$(go list ./cmd/... ./common/... $(addprefix ./,$(addsuffix /...,$(PROVIDER_DIRS))) 2>/dev/null | grep -v -e '/integration$$' -e '/realstack$$')

fuzz:
	@bash build/fuzz.sh $(FUZZTIME)

# One package at a time: each starts its own control plane, and 2 cores are few.
integration: testbin $(addprefix build-,$(PROVIDERS))
	CCM_BINARY=$(CURDIR)/bin/ccm-dummy CCM_BIN_DIR=$(CURDIR)/bin CCM_TESTBIN=$(CURDIR)/bin/testbin CCM_VERSION=$(VERSION) \
		go test -count=1 -p 1 -timeout 30m -v $(INTEGRATION_PKGS) 2>&1 | tee bin/integration.log | grep --line-buffered -E '^(=== RUN|--- |PASS|FAIL|ok|panic|no etcd|control plane ready)|_test.go:'; \
		rc=$${PIPESTATUS[0]}; [ $$rc = 0 ] || bash build/failed-tests.sh bin/integration.log; exit $$rc

test: unit fuzz image-test integration faults-short helm-test

# The Helm charts (deploy/charts): lint, render with every ci/ values file, check-config,
# server-side dry-run, and a dummy install + upgrade (test/helm). helm is built once into bin/testbin.
helm-test: testbin $(addprefix build-,$(PROVIDERS))
	@bash build/testbin.sh helm
	CCM_BIN_DIR=$(CURDIR)/bin CCM_TESTBIN=$(CURDIR)/bin/testbin go test -count=1 -v ./test/helm/ 2>&1 | tee bin/helm-test.log | grep --line-buffered -E '^(\s*--- |PASS|FAIL|ok|panic)|_test.go:'; \
		exit $${PIPESTATUS[0]}

# Fault scenarios (outage, churn with SIGKILLs, throttling, credentials in logs, leader failover)
# for every provider against its simulator; see test/faults. make test runs the short form.
FAULTS_ARGS ?=
faults: testbin $(addprefix build-,$(PROVIDERS))
	CCM_BIN_DIR=$(CURDIR)/bin CCM_TESTBIN=$(CURDIR)/bin/testbin go run ./test/faults --providers=$(subst $(space),$(comma),$(PROVIDERS)) $(FAULTS_MODE) $(FAULTS_ARGS)

faults-short: FAULTS_MODE := --short
faults-short: faults

verify:
	@bash build/verify.sh

flags-doc:
	@bash build/flags.sh

demo: testbin build-$(PROVIDER)
	CCM_BINARY=$(CURDIR)/bin/ccm-$(PROVIDER) CCM_TESTBIN=$(CURDIR)/bin/testbin \
		go run ./test/demo --provider=$(PROVIDER)

clean:
	rm -rf bin/ccm bin/ccm-* out/

# Figures for the dummy provider on the local control plane (see test/bench).
BENCH_ARGS ?=
bench-dummy: testbin build-dummy
	CCM_BINARY=$(CURDIR)/bin/ccm-dummy CCM_TESTBIN=$(CURDIR)/bin/testbin go run ./test/bench $(BENCH_ARGS)

# The service controller at scale (providers/dummy/scalebench): a new Service's time to an
# address while a drift resync runs, and updates per load balancer for a burst of Nodes.
bench-scale: testbin
	CCM_TESTBIN=$(CURDIR)/bin/testbin go run ./providers/dummy/scalebench $(SCALE_ARGS)

# Every provider's figures: the dummy's, then providers/NAME/bench against each simulator, then
# bin/bench/summary.md merged from every bin/bench/NAME.json (schema: common/benchreport).
BENCH_PROVIDERS := $(filter $(PROVIDERS),$(patsubst providers/%/bench,%,$(wildcard providers/*/bench)))
bench: bench-dummy bench-scale $(addprefix build-,$(BENCH_PROVIDERS))
	@for p in $(BENCH_PROVIDERS); do \
		echo "==> bench: $$p"; \
		CCM_BIN_DIR=$(CURDIR)/bin CCM_BINARY=$(CURDIR)/bin/ccm-$$p CCM_TESTBIN=$(CURDIR)/bin/testbin go run ./providers/$$p/bench || exit 1; \
	done
	go run ./test/bench --merge=$(CURDIR)/bin/bench

# Per-vendor images without a container engine (go-containerregistry): bin/images/ccm-NAME
# (OCI layout) and bin/images/ccm-NAME.tar (docker load). The Dockerfile builds the same for
# people with Docker.
IMAGE_REGISTRY ?= ccm.local
image: build-$(PROVIDER)
	cd build/image && GOWORK=off go run ./cmd/build-image --binary=$(CURDIR)/bin/ccm-$(PROVIDER) \
		--provider=$(PROVIDER) --version=$(VERSION) --registry=$(IMAGE_REGISTRY) --out=$(CURDIR)/bin/images

images:
	@for p in $(PROVIDERS); do $(MAKE) --no-print-directory image PROVIDER=$$p || exit 1; done

# A release (build/release.sh): per provider a linux/amd64 + linux/arm64 image index, an SBOM
# and the chart pinned to the image by digest, pushed to RELEASE_REGISTRY (images and OCI
# charts), with artefacts.txt and SHA256SUMS in bin/release/VERSION. RELEASE_PUSH=false pushes
# nothing. make helm-test runs it against a registry served by the test.
release:
	VERSION=$(VERSION) bash build/release.sh

image-test: build $(addprefix build-,$(PROVIDERS))
	cd build/image && CCM_BIN_DIR=$(CURDIR)/bin CCM_PROVIDERS="$(PROVIDERS)" GOWORK=off go test -count=1 -v ./... 2>&1 | grep -E '^(=== RUN|\s*--- |PASS|FAIL|ok)|_test.go:'; exit $${PIPESTATUS[0]}

# Real OpenStack services (Keystone, Nova with a fake hypervisor, Neutron, Octavia, ...) from
# Debian 12 packages on 127.0.0.1, for testing the openstack provider against the real APIs.
# Not part of `make test`; see build/realstack/README.md. State in bin/realstack (REALSTACK_DIR).
realstack:
	@bash build/realstack/realstack.sh up

realstack-stop:
	@bash build/realstack/realstack.sh stop

realstack-status:
	@bash build/realstack/realstack.sh status

# providers/openstack/realstack against the services `make realstack` runs (it fails, not
# skips, when they are not there). CI runs it after `make test`.
realstack-test:
	CCM_REALSTACK_DIR=$(CURDIR)/bin/realstack go test -count=1 -v -timeout 40m ./providers/openstack/realstack/ 2>&1 | tee bin/realstack-test.log | grep --line-buffered -E '^(=== RUN|\s*--- |PASS|FAIL|ok|panic)|^\s+\S+\.go:[0-9]+: '; \
		exit $${PIPESTATUS[0]}
