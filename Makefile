# slime-image: build, check and ship the SLIME image. `make` or `make help` lists the targets.
# Versions are never written here: TAG comes from slime.Dockerfile through tools/release/versions.py.
# Host tools run from the project virtualenv as `python -m tools.<name>`; image commands run in the image.

SHELL := /bin/bash
.DEFAULT_GOAL := help
.SUFFIXES:

PYTHON       ?= python3
VENV         ?= .venv
VPY          := $(VENV)/bin/python
IMAGE        ?= slime-image
TAG          ?= $(shell $(VPY) -m tools.release.versions $(if $(PAIRING),--pairing "$(PAIRING)") tag)
PLATFORM     ?= linux/amd64
# A slime release other than the Dockerfile's default (pairings/<name>.toml); empty for the default.
PAIRING      ?=
AWS_REGION   ?= us-west-2
# How make push compresses the layers: gzip (docker push) or zstd (skopeo; a node unpacks it faster, docs/benchmarks.md).
COMPRESSION  ?= gzip
ECR_REPOSITORY ?= $(IMAGE)
REPORTS      ?= reports
# More arguments for slime-canary in make canary: --learn (the policy learns), --fault NAME (a broken state it must fail).
CANARY_ARGS  ?=
# Filled from `aws sts get-caller-identity` by `make push` when unset (never needed to build).
AWS_ACCOUNT_ID ?=

# The reports' folder, made when missing; an empty REPORTS names itself rather than reaching mkdir.
reports_dir = [ -n "$(strip $(REPORTS))" ] || { echo "make $@: REPORTS is empty: the reports have no folder" >&2; \
	echo "fix: leave REPORTS unset (reports/) or name a folder: REPORTS=out" >&2; exit 1; }; mkdir -p "$(REPORTS)"

# One line naming what is missing and how to get it, then a non-zero exit.
need = command -v $(1) >/dev/null 2>&1 || { echo "make $@: '$(1)' is not installed: $(2)" >&2; exit 1; }
need_engine = $(call need,docker,install Docker (https://docs.docker.com/engine/install/)); \
	timeout 5 docker info >/dev/null 2>&1 || { echo "make $@: no Docker engine answers on this machine ('docker info' failed): start dockerd, or use make plan / make test, which need none" >&2; exit 1; }

.PHONY: help
help: ## List the targets
	@# A reader that stops early (make help | head) is no error: SIGPIPE ignored, the write errors left unsaid.
	@trap '' PIPE; { \
	echo "slime-image: the SLIME image recipe for EKS (H200, B300, CUDA 13)"; \
	echo; \
	grep -hE '^[a-z][a-z-]*:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-19s %s\n", $$1, $$2}'; \
	echo; \
	echo "Variables: IMAGE=$(IMAGE) TAG=<from slime.Dockerfile> PLATFORM=$(PLATFORM) REPORTS=$(REPORTS) AWS_REGION=$(AWS_REGION) AWS_ACCOUNT_ID=<from aws sts when unset>"; \
	} 2>/dev/null; exit 0

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.path.insert(0, "image"); from slime_image.python_needed import check; check("set PYTHON to one for the project tools: make venv PYTHON=python3.12", "make venv")'
	@$(PYTHON) -m venv $(VENV)
	@$(PYTHON) -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["dev"]))' > $(VENV)/dev-requirements.txt
	@$(VPY) -m pip install -q --disable-pip-version-check -r $(VENV)/dev-requirements.txt
	@$(VPY) -c 'import site, sys; open(site.getsitepackages()[0] + "/slime-image.pth", "w").write("\n".join(sys.argv[1:]) + "\n")' "$(CURDIR)" "$(CURDIR)/image"
	@touch $@

.PHONY: venv
venv: $(VENV)/.installed ## Create the project virtualenv with the pinned tools (other targets do it themselves)

DOCKERFILE   ?= slime.Dockerfile

.PHONY: plan
plan: $(VENV)/.installed ## Predict each pip layer of DOCKERFILE (default slime.Dockerfile; PAIRING=v0.3.0 for another release) and check the result
	@$(reports_dir)
	$(VPY) -m tools.planner.plan --dockerfile "$(DOCKERFILE)" --platform "$(PLATFORM)" $(if $(PAIRING),--pairing "$(PAIRING)") \
	  --report-json $(REPORTS)/plan.json --report-junit $(REPORTS)/plan.xml $(PLAN_ARGS)

.PHONY: lock
lock: $(VENV)/.installed ## Re-plan without the lock and rewrite the lock of PAIRING (locks/<pairing>.lock) from the result
	@lock=$$($(VPY) -m tools.inputs.pairings lock "$(or $(PAIRING),default)") && \
	$(VPY) -m tools.planner.plan --platform "$(PLATFORM)" $(if $(PAIRING),--pairing "$(PAIRING)") --lock "$$lock"

.PHONY: walls
walls: $(VENV)/.installed ## Where each wall is guarded (WALLS="W13 W22" for some)
	@$(VPY) -m tools.wall_guards $(WALLS)

.PHONY: pairings
pairings: $(VENV)/.installed ## List the supported slime releases (pairings/), the default marked
	@$(VPY) -m tools.inputs.pairings list

.PHONY: promote
promote: $(VENV)/.installed ## Make PAIRING the default: slime.Dockerfile's ARG defaults and the docs tables from its TOML
	@$(VPY) -m tools.promote "$(or $(PAIRING),default)"

.PHONY: base-manifest
base-manifest: $(VENV)/.installed ## Write base-manifests/ for BASE_IMAGE (default: slime.Dockerfile's): its Python and its published weight (needs Docker)
	@$(VPY) -m tools.planner.platforms "$(PLATFORM)" >/dev/null
	@$(need_engine)
	@base="$(BASE_IMAGE)"; [ -n "$$base" ] || base=$$($(VPY) -m tools.release.versions get BASE_IMAGE); tmp=$$(mktemp -d); \
	docker manifest inspect -v "$$base" > $$tmp/registry.json && \
	if docker run --rm --platform "$(PLATFORM)" --entrypoint python3 "$$base" -m pip inspect --local > $$tmp/inspect.json 2>/dev/null; then \
	  { docker run --rm --platform "$(PLATFORM)" --entrypoint cat "$$base" /etc/pip/constraint.txt > $$tmp/constraint.txt 2>/dev/null || true; }; \
	  inspect="--inspect $$tmp/inspect.json --constraint $$tmp/constraint.txt"; \
	else inspect=""; fi && \
	$(VPY) -m tools.planner.base_manifest --image "$$base" $$inspect --registry-manifest $$tmp/registry.json --platform "$(PLATFORM)"; \
	  status=$$?; rm -rf $$tmp; exit $$status

OVERLAY      ?= h200
RENDERED     := $(REPORTS)/manifests-$(OVERLAY).yaml
KUBECTL_NS    = $$($(VPY) -m tools.k8s.k8s_render --overlay "$(OVERLAY)" --get NAMESPACE)
need_cluster = $(call need,kubectl,install kubectl (https://kubernetes.io/docs/tasks/tools/)); \
	timeout 10 kubectl cluster-info >/dev/null 2>&1 || { echo "make $@: kubectl reaches no cluster (kubectl cluster-info failed): aws eks update-kubeconfig --name <cluster>" >&2; exit 1; }

.PHONY: render
render: $(VENV)/.installed ## Print the EKS manifests for OVERLAY=h200|b300|h100 (IMAGE, NAMESPACE, NUM_NODES, FSX_CLAIM required)
	@$(VPY) -m tools.k8s.k8s_render --overlay "$(OVERLAY)"

.PHONY: validate-manifests
validate-manifests: $(VENV)/.installed ## Render OVERLAY and validate it offline (Kubernetes and KubeRay schemas, yamllint, policies)
	@$(reports_dir)
	@$(VPY) -m tools.k8s.k8s_render --overlay "$(OVERLAY)" --out "$(RENDERED)" \
	  --report-json $(REPORTS)/render-$(OVERLAY).json --report-junit $(REPORTS)/render-$(OVERLAY).xml
	@image=$$($(VPY) -m tools.k8s.k8s_render --overlay "$(OVERLAY)" --get IMAGE) && \
	$(VPY) -m tools.k8s.k8s_validate "$(RENDERED)" --overlay "$(OVERLAY)" --image "$$image" \
	  --report-json $(REPORTS)/manifests-$(OVERLAY).json --report-junit $(REPORTS)/manifests-$(OVERLAY).xml

.PHONY: crds
crds: $(VENV)/.installed ## Download the KubeRay CRDs the manifest tests validate against into .cache/kuberay-crds
	@$(VPY) -m tools.k8s.kuberay_crds

.PHONY: deploy
deploy: $(VENV)/.installed ## Apply the RayCluster for OVERLAY to the current cluster
	@$(need_cluster)
	@$(VPY) -m tools.k8s.k8s_nodes --overlay "$(OVERLAY)"
	@$(VPY) -m tools.k8s.k8s_render --overlay "$(OVERLAY)" --only raycluster --out "$(RENDERED)"
	kubectl apply -f "$(RENDERED)"

.PHONY: data-prep
data-prep: $(VENV)/.installed ## Download the model and datasets onto the shared file system (a Job)
	@$(need_cluster)
	@$(VPY) -m tools.k8s.k8s_render --overlay "$(OVERLAY)" --only data-prep-job --out "$(RENDERED)"
	kubectl apply -f "$(RENDERED)"

.PHONY: preflight
preflight: $(VENV)/.installed ## Run the smoke suite on one GPU node of OVERLAY as a Job; print its report; exit with its status
	@$(need_cluster)
	@$(VPY) -m tools.k8s.k8s_render --overlay "$(OVERLAY)" --only preflight-job --out "$(RENDERED)"
	@ns=$(KUBECTL_NS); job=$$(kubectl create -f "$(RENDERED)" -o name) || exit 1; \
	kubectl -n $$ns wait --for=condition=complete --for=condition=failed --timeout=30m $$job >/dev/null; \
	kubectl -n $$ns logs $$job; \
	failed=$$(kubectl -n $$ns get $$job -o jsonpath='{.status.failed}'); \
	kubectl -n $$ns delete $$job --wait=false >/dev/null; \
	[ -z "$$failed" ] || [ "$$failed" = 0 ]

.PHONY: preflight-p2p
preflight-p2p: $(VENV)/.installed ## Two GPU nodes of OVERLAY exchange over NCCL and EFA, GPU by GPU (a Job of 2 pods); exit with its status
	@$(need_cluster)
	@$(VPY) -m tools.k8s.k8s_render --overlay "$(OVERLAY)" --only preflight-p2p --out "$(RENDERED)"
	@ns=$(KUBECTL_NS); made=$$(kubectl create -f "$(RENDERED)" -o name) || exit 1; job=$$(echo "$$made" | grep '^job'); \
	kubectl -n $$ns wait --for=condition=complete --for=condition=failed --timeout=30m $$job >/dev/null; \
	kubectl -n $$ns logs -l job-name=$${job#*/} --prefix --tail=-1; \
	failed=$$(kubectl -n $$ns get $$job -o jsonpath='{.status.failed}'); \
	kubectl -n $$ns delete $$made --wait=false >/dev/null; \
	[ -z "$$failed" ] || [ "$$failed" = 0 ]

.PHONY: smoke-pod
smoke-pod: $(VENV)/.installed ## Run the smoke suite (all stages) inside a running Ray GPU worker pod
	@$(need_cluster)
	@ns=$(KUBECTL_NS); pod=$$(kubectl -n $$ns get pods -l app.kubernetes.io/component=ray-gpu-worker -o name | head -1); \
	[ -n "$$pod" ] || { echo "make smoke-pod: no Ray GPU worker pod in namespace $$ns: run make deploy first" >&2; exit 1; }; \
	kubectl -n $$ns exec $$pod -- slime-smoke --stage all

.PHONY: submit
submit: $(VENV)/.installed ## Submit the Qwen3-4B GRPO job (kubernetes/launch/) through the Ray head pod
	@$(need_cluster)
	@ns=$(KUBECTL_NS); pod=$$(kubectl -n $$ns get pods -l app.kubernetes.io/component=ray-head -o name | head -1); \
	[ -n "$$pod" ] || { echo "make submit: no Ray head pod in namespace $$ns: run make deploy first" >&2; exit 1; }; \
	recipe=$$($(VPY) -m tools.k8s.k8s_render --overlay "$(OVERLAY)" --get LAUNCH_RECIPE) && \
	nodes=$$($(VPY) -m tools.k8s.k8s_render --overlay "$(OVERLAY)" --get NUM_NODES) && \
	allow=$$($(VPY) -m tools.k8s.k8s_render --overlay "$(OVERLAY)" --get ALLOW_OTHER_IMAGE) && \
	versions=$$(mktemp) && trap 'rm -f "$$versions"' EXIT && \
	kubectl -n $$ns exec $$pod -- cat /opt/slime-image/versions.json > "$$versions" && { $(reports_dir); } && \
	$(VPY) -m tools.k8s.grpo_submit --recipe "$$recipe" --num-nodes "$$nodes" --image-versions "$$versions" \
	  $$([ "$$allow" = 1 ] && echo --allow-other-image) --overlay "$(OVERLAY)" \
	  --report-json $(REPORTS)/submit.json --report-junit $(REPORTS)/submit.xml -- kubectl -n $$ns exec $$pod -- ray

# How many pytest workers make test runs (pytest-xdist): one more than the cores, since part of the suite waits on
# the package index (a fresh clone on 2 cores: 4 min 27 s with 3 workers, 5 min 1 s with 2; docs/benchmarks.md),
# at most MAX_TEST_WORKERS: each worker may hold a throwaway Python 3.12 venv and a planner's simulated environment at
# once, so past that a many-core machine runs out of memory and of the index's patience before it gains time;
# 0 runs the suite in this process alone.
MAX_TEST_WORKERS := 16
bad_test_workers = echo "make test: TEST_WORKERS is not a whole number from 0 to $(MAX_TEST_WORKERS)" >&2; \
	echo "fix: leave TEST_WORKERS unset (a worker a core and one more), or TEST_WORKERS=0 for one process" >&2; exit 1
TEST_WORKERS ?= $(shell n=$$(( $$(nproc) + 1 )); echo $$(( n < $(MAX_TEST_WORKERS) ? n : $(MAX_TEST_WORKERS) )))

.PHONY: test
test: $(VENV)/.installed ## Run the test suite (no Docker, no GPU needed), a worker a core and one more (TEST_WORKERS=)
	@# Checked by make, the value never pasted into the shell: one word, a whole number from 0 to MAX_TEST_WORKERS.
	@$(if $(filter-out 1,$(words $(TEST_WORKERS)))$(filter-out $(shell seq 0 $(MAX_TEST_WORKERS)),$(TEST_WORKERS)),$(bad_test_workers))
	$(VPY) -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

.PHONY: lint
lint: $(VENV)/.installed ## ruff, hadolint, the generated tables of docs/, the pairings and the Dockerfile's rules
	$(VENV)/bin/ruff check image tools tests benchmarks
	$(VENV)/bin/ruff format --check image tools tests benchmarks
	$(VENV)/bin/hadolint -c .hadolint.yaml $$([ -t 1 ] || echo --no-color) slime.Dockerfile
	$(VPY) -m tools.docs --check
	$(VPY) -m tools.inputs.pairings check
	@$(reports_dir)
	$(VPY) -m tools.inputs.rules --report-json $(REPORTS)/rules.json --report-junit $(REPORTS)/rules.xml

.PHONY: versions
versions: $(VENV)/.installed ## Print the version set declared in slime.Dockerfile (of PAIRING, when given)
	@$(VPY) -m tools.release.versions $(if $(PAIRING),--pairing "$(PAIRING)") json

.PHONY: tag
tag: $(VENV)/.installed ## Print the default image tag (of PAIRING, when given)
	@$(VPY) -m tools.release.versions $(if $(PAIRING),--pairing "$(PAIRING)") tag

.PHONY: docs
docs: $(VENV)/.installed ## Regenerate the tables of docs/ (versions, pairings, checks, patches, walls) from their sources
	$(VPY) -m tools.docs

# The engine `make build` drives (docker with buildx, podman or buildah; empty: the first found) and extra
# NAME=value build arguments for it, read as shell words so a quoted value stays one (a mirror:
# BUILD_ARGS="MEGATRON_REPO_URL=... SLIME_REPO_URL=..."). tools/release/build.py works out the rest of the command, as
# the verification build's, and refuses an extra that would change what the image holds under the same tag.
ENGINE       ?=
BUILD_ARGS   ?=
bad_dry_run = echo "make build: DRY_RUN is neither 0 nor 1" >&2; \
	echo "fix: DRY_RUN=1 prints the engine's command; DRY_RUN=0, or unset, builds" >&2; exit 1

.PHONY: build
build: $(VENV)/.installed ## Build the image IMAGE:TAG for PLATFORM with ENGINE=docker|podman|buildah (default: the first found); DRY_RUN=1 prints the command
	@# DRY_RUN=0 builds, as unset does; any value but 0 and 1 is refused rather than guessed (checked by make).
	@$(if $(filter-out 0 1,$(DRY_RUN) $(words $(DRY_RUN))),$(bad_dry_run))
	@$(VPY) -m tools.release.build $(if $(PAIRING),--pairing "$(PAIRING)") $(if $(ENGINE),--engine "$(ENGINE)") --platform "$(PLATFORM)" \
	  --image "$(IMAGE)" $(if $(TAG),--tag "$(TAG)") $(if $(BUILD_ARGS),--build-args '$(subst ','\'',$(BUILD_ARGS))') $(if $(filter 1,$(DRY_RUN)),--dry-run)

# The git sources of the verification build, each a mirror's path or a URL (default: the Dockerfile's upstream).
MEGATRON_REPO ?=
SLIME_REPO    ?=
APEX_REPO     ?=

.PHONY: build-check
build-check: $(VENV)/.installed ## Verification build: buildah, a stand-in CUDA base, sources from MEGATRON_REPO/SLIME_REPO/APEX_REPO (path or URL); record in docs/build/
	$(VPY) -m tools.release.build_check.run $(if $(PAIRING),--pairing "$(PAIRING)") $(if $(MEGATRON_REPO),--megatron-repo "$(MEGATRON_REPO)") $(if $(SLIME_REPO),--slime-repo "$(SLIME_REPO)") $(if $(APEX_REPO),--apex-repo "$(APEX_REPO)")
	$(VPY) -m tools.docs  # the tables that quote the records (docs/benchmarks.md, "What a node pulls")

# The image make build-check made, to compare a second uncached build with (empty: repro-check builds twice).
AGAINST ?=

.PHONY: repro-check
repro-check: $(VENV)/.installed ## Build the verification build's recipe again without cache and compare every layer; docs/build/<pairing>/reproducibility.json
	$(VPY) -m tools.release.build_check.repro $(if $(PAIRING),--pairing "$(PAIRING)") $(if $(MEGATRON_REPO),--megatron-repo "$(MEGATRON_REPO)") $(if $(SLIME_REPO),--slime-repo "$(SLIME_REPO)") $(if $(APEX_REPO),--apex-repo "$(APEX_REPO)") $(if $(AGAINST),--against "$(AGAINST)")

.PHONY: push
push: $(VENV)/.installed ## Push IMAGE:TAG to ECR (creates the repository when missing), COMPRESSION=gzip or zstd; print the reference with its digest
	@case "$(COMPRESSION)" in gzip) ;; zstd) $(call need,skopeo,install skopeo (apt-get install skopeo): docker push writes gzip only) ;; \
	  *) echo "make push: COMPRESSION=$(COMPRESSION) is neither gzip nor zstd" >&2; echo "fix: COMPRESSION=zstd (faster to unpack on a node) or gzip (the default)" >&2; exit 1 ;; esac
	@$(call need,aws,install the AWS CLI v2 (https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html))
	@$(need_engine)
	@account="$(AWS_ACCOUNT_ID)"; \
	if [ -z "$$account" ]; then \
	  account=$$(timeout 20 aws sts get-caller-identity --query Account --output text 2>/dev/null) || \
	    { echo "make push: no AWS credentials ('aws sts get-caller-identity' failed): run 'aws configure' or 'aws sso login', or set AWS_ACCOUNT_ID" >&2; exit 1; }; \
	fi; \
	registry="$$account.dkr.ecr.$(AWS_REGION).amazonaws.com"; \
	docker image inspect "$(IMAGE):$(TAG)" >/dev/null 2>&1 || { echo "make push: image $(IMAGE):$(TAG) is not built here: run make build first" >&2; exit 1; }; \
	aws ecr describe-repositories --region $(AWS_REGION) --repository-names $(ECR_REPOSITORY) >/dev/null 2>&1 || \
	  aws ecr create-repository --region $(AWS_REGION) --repository-name $(ECR_REPOSITORY) >/dev/null || exit 1; \
	aws ecr get-login-password --region $(AWS_REGION) | docker login --username AWS --password-stdin "$$registry" || exit 1; \
	ref="$$registry/$(ECR_REPOSITORY):$(TAG)"; \
	if [ "$(COMPRESSION)" = zstd ]; then \
	  skopeo copy -q --dest-compress-format zstd --format oci --dest-creds "AWS:$$(aws ecr get-login-password --region $(AWS_REGION))" \
	    "docker-daemon:$(IMAGE):$(TAG)" "docker://$$ref" && \
	  digest=$$(skopeo inspect --creds "AWS:$$(aws ecr get-login-password --region $(AWS_REGION))" --format '{{.Digest}}' "docker://$$ref") || exit 1; \
	else \
	  docker tag "$(IMAGE):$(TAG)" "$$ref" && docker push "$$ref" && \
	  digest=$$(docker image inspect --format '{{index .RepoDigests 0}}' "$$ref" | cut -d@ -f2) || exit 1; \
	fi; \
	echo "make push: pushed $$registry/$(ECR_REPOSITORY)@$$digest as $$ref ($(COMPRESSION) layers; fingerprint" \
	  "$$(docker image inspect --format '{{index .Config.Labels "org.slime-image.inputs"}}' $(IMAGE):$(TAG)))"

.PHONY: canary
canary: $(VENV)/.installed ## Run slime-canary (slime's GRPO job with slime's CI assertions, 2 iterations on 1 GPU, about 5 min; CANARY_ARGS=--learn: the policy learns) in the built image; reports in REPORTS/
	@$(need_engine)
	@docker image inspect "$(IMAGE):$(TAG)" >/dev/null 2>&1 || { echo "make canary: image $(IMAGE):$(TAG) is not built here: run make build, or set IMAGE/TAG" >&2; exit 1; }
	@$(reports_dir)
	docker run --rm --gpus 1 --ipc=host --shm-size 16g -v "$(CURDIR)/$(REPORTS):/reports" "$(IMAGE):$(TAG)" \
		slime-canary --json /reports/canary.json --junit /reports/canary.xml $(CANARY_ARGS)

.PHONY: smoke-test
smoke-test: $(VENV)/.installed ## Run the smoke suite (all stages) in the built image on this host's GPUs; reports in REPORTS/
	@$(need_engine)
	@docker image inspect "$(IMAGE):$(TAG)" >/dev/null 2>&1 || { echo "make smoke-test: image $(IMAGE):$(TAG) is not built here: run make build, or set IMAGE/TAG" >&2; exit 1; }
	@$(reports_dir)
	docker run --rm --gpus all --ipc=host -v "$(CURDIR)/$(REPORTS):/reports" "$(IMAGE):$(TAG)" \
		slime-smoke --stage all --json /reports/smoke.json --junit /reports/smoke.xml
