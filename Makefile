# slime-image: build, check and ship the SLIME image. `make` or `make help` lists the targets.
# Versions are never written here: TAG comes from slime.Dockerfile through tools/release/versions.py.
# Host tools run from the project virtualenv as `python -m tools.<name>`; image commands run in the image.

SHELL := /bin/bash
.DEFAULT_GOAL := help
.SUFFIXES:

# A value given on make's command line or in the environment is data, never code. Each is held as typed (a simple
# variable of its unexpanded text, exported as before), so make runs no `$(shell ...)` in it and eats no `$` of a
# password; a recipe passes it to the shell only through `q`, as one word, so no `;`, quote or `$(...)` in it runs.
$(foreach v,$(.VARIABLES),$(if $(filter command environment,$(firstword $(origin $(v)))),$(eval override $(v) := $$(value $(v)))))
$(foreach v,$(.VARIABLES),$(if $(filter override,$(origin $(v))),$(eval export $(v))))
define newline


endef
# Every recipe line runs silently (`@`): make echoes a line with the variables in it as given, a password in BUILD_ARGS,
# SLIME_REPO or AGAINST with them, before the tool it runs redacts it in its own words (sweep 14 W9).
# `$(call q,TEXT)`: TEXT as one shell word, exactly: in single quotes, each quote as '\'' and each newline as '$'\n''
# (make would cut the recipe line at a newline).
q = '$(subst $(newline),'$$'\n'',$(subst ','\'',$(1)))'
# `$(call array,TEXT,NAME)`: TEXT split at blanks into the bash array NAME, for a variable of several arguments
# (PLAN_ARGS, WALLS): each word one argument, nothing in it run; use it as "$${NAME[@]}".
array = IFS=$$' \t\n' read -r -d '' -a $(2) < <(printf '%s' $(call q,$(1))) || true

PYTHON       ?= python3
VENV         ?= .venv
VPY           = $(call q,$(VENV)/bin/python)
IMAGE        ?= slime-image
# Its default's refusal (a pairing that does not exist) is left to the target that reads TAG, which says it once.
# The default is worked out at TAG's first use, then held: a recipe names TAG up to three times, each a Python start.
tag_default   = $(shell $(VPY) -m tools.release.versions $(pairing_opt) tag 2>/dev/null)
TAG          ?= $(eval TAG := $(value tag_default))$(TAG)
PLATFORM     ?= linux/amd64
# A slime release other than the Dockerfile's default (pairings/<name>.toml); empty for the default.
PAIRING      ?=
pairing_opt   = $(if $(PAIRING),--pairing=$(call q,$(PAIRING)))
AWS_REGION   ?= us-west-2
# How make push compresses the layers: gzip (docker push) or zstd (skopeo; a node unpacks it faster, docs/benchmarks.md).
COMPRESSION  ?= gzip
ECR_REPOSITORY ?= $(IMAGE)
REPORTS      ?= reports
# More arguments for slime-canary in make canary: --learn (the policy learns), --fault NAME (a broken state it must fail).
CANARY_ARGS  ?=
# Filled from `aws sts get-caller-identity` by `make push` when unset (never needed to build).
AWS_ACCOUNT_ID ?=

# The reports' folder, checked and not made: the command that writes a report makes its folder with it, so a refused
# run leaves none behind (an empty reports/ was made before `make plan` refused its lock). An empty REPORTS, or one
# that is no folder and none can be made at (its nearest existing path no folder, or one that takes none: a probe
# folder is made there and removed), is named in two lines. `reports_mount`: made, for a container to write in.
# `$(call makeable,NAME,DEFAULT)`: the folder variable NAME (unset: DEFAULT) refused in two lines unless it is a folder,
# or none yet where one can be made (sweep 10 U3: VENV naming a file, or under /proc, ended in venv's own one line).
makeable = at=$(call q,$($(1))); while [ ! -e "$$at" ] && [ ! -L "$$at" ]; do at=$$(dirname -- "$$at"); done; \
	{ [ -d "$$at" ] && probe=$$(mktemp -d -p "$$at" 2>/dev/null) && rmdir "$$probe"; } || { \
	echo "make $@: $(1)="$(call q,$($(1)))" is no folder that can be made" >&2; \
	echo "fix: name a folder you may write, or leave $(1) unset ($(2))" >&2; exit 1; }
reports_dir = [ -n $(call q,$(strip $(REPORTS))) ] || { echo "make $@: REPORTS is empty: the reports have no folder" >&2; \
	echo "fix: leave REPORTS unset (reports/) or name a folder: REPORTS=out" >&2; exit 1; }; \
	$(call makeable,REPORTS,reports/)
reports_mount = $(reports_dir); mkdir -p $(call q,$(REPORTS))

# Variables that name one thing (a path, a name, a source): one given empty, on the command line or in the
# environment, would silently stand for another (VENV= the repository root for the virtualenv, PAIRING= the default
# pairing, AGAINST= no image to compare with); make reads a blank one (PAIRING=" ") as empty. Every target but help runs
# `venv` first, whose first command refuses it in two lines; unset, each has its default. The lists of words
# (PLAN_ARGS, WALLS, BUILD_ARGS, PYTEST_ARGS, CANARY_ARGS) may be empty, for none; REPORTS, TEST_WORKERS and DRY_RUN
# are checked where they are read.
NAMING := VENV PYTHON IMAGE TAG PLATFORM PAIRING AWS_REGION COMPRESSION ECR_REPOSITORY AWS_ACCOUNT_ID DOCKERFILE \
	BASE_IMAGE OVERLAY ENGINE MEGATRON_REPO SLIME_REPO APEX_REPO AGAINST
given_empty = $(firstword $(foreach v,$(NAMING),$(if $(filter override,$(origin $(v))),$(if $(strip $(value $(v))),,$(v)))))
empty_named = echo "make: $(given_empty) is given empty (or blank): it names nothing, and would silently stand for \
	another" >&2; echo "fix: give $(given_empty) a value, or leave it unset for its default" >&2; exit 1
refuse_empty = $(if $(given_empty),$(empty_named))
# DOCKERFILE is make plan's alone: make build, lint or lock given another built, linted or locked slime.Dockerfile
# unsaid (sweep 5 U6).
other_goals = $(filter-out plan venv help,$(MAKECMDGOALS))
dockerfile_unread = $(if $(filter-out slime.Dockerfile,$(DOCKERFILE)),$(firstword $(other_goals)))
dockerfile_named = echo "make: DOCKERFILE="$(call q,$(DOCKERFILE))" is read by make plan alone: make \
	$(dockerfile_unread) would use slime.Dockerfile" >&2; echo "fix: leave DOCKERFILE out, or make plan \
	DOCKERFILE="$(call q,$(DOCKERFILE))" alone" >&2; exit 1
refuse_unread = $(if $(dockerfile_unread),$(dockerfile_named))

# One line naming what is missing and how to get it, then a non-zero exit.
need = command -v $(1) >/dev/null 2>&1 || { echo "make $@: '$(1)' is not installed: $(2)" >&2; exit 1; }
# TAG's default is empty where versions refused it: the refusal is said here, once, in its two lines.
need_tag = [ -n $(call q,$(TAG)) ] || { $(VPY) -m tools.release.versions $(pairing_opt) tag >/dev/null; exit 1; }
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
	echo "Variables: IMAGE="$(call q,$(IMAGE))" TAG=<from slime.Dockerfile> PLATFORM="$(call q,$(PLATFORM))" REPORTS="$(call q,$(REPORTS))" AWS_REGION="$(call q,$(AWS_REGION))" AWS_ACCOUNT_ID=<from aws sts when unset>"; \
	} 2>/dev/null; exit 0

# The virtualenv is made again when pyproject.toml is newer than its stamp: a test in the shell rather than a rule's
# target, so VENV is a path the shell reads, never text of make's own syntax.
python_fix = set PYTHON to a Python interpreter, by its name on PATH or its path (PYTHON --version prints its \
	version): make venv PYTHON=python3.12
.PHONY: venv
venv: ## Create the project virtualenv with the pinned tools (other targets do it themselves)
	@$(refuse_empty)
	@$(refuse_unread)
	@venv=$(call q,$(VENV)); [ -e "$$venv/.installed" ] && [ ! pyproject.toml -nt "$$venv/.installed" ] && exit 0; \
	{ [ -L "$$venv" ] && [ -d "$$venv" ]; } && { echo "make $@: VENV="$(call q,$(VENV))" is a link to \
	$$(readlink -f -- "$$venv"): python -m venv makes none through a link (it would remake the one there)" >&2; \
	echo "fix: remove the link for a virtualenv of this clone's own, or name the folder itself: \
	VENV=$$(readlink -f -- "$$venv")" >&2; exit 1; }; \
	$(call makeable,VENV,.venv); \
	python=$(call q,$(PYTHON)); \
	command -v "$$python" >/dev/null 2>&1 || { echo "make $@: PYTHON="$(call q,$(PYTHON))" is no command (none of \
	that name on PATH, nor a program at that path)" >&2; echo "fix: $(python_fix)" >&2; exit 1; }; \
	[ "$$("$$python" -c 'import sys; sys.stdout.write("%d.%d" % sys.version_info[:2])' 2>/dev/null)" ] || { \
	echo "make $@: PYTHON="$(call q,$(PYTHON))" is no Python: run as one, it prints no version" >&2; \
	echo "fix: $(python_fix)" >&2; exit 1; }; \
	"$$python" -c 'import sys; sys.path.insert(0, "image"); from slime_image.python_needed import check; check("set PYTHON to one for the project tools: make venv PYTHON=python3.12", "make venv")' && \
	"$$python" -m venv "$$venv" && \
	"$$python" -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["dev"]))' > "$$venv/dev-requirements.txt" && \
	"$$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$$venv/dev-requirements.txt" && \
	"$$venv/bin/python" -c 'import site, sys; open(site.getsitepackages()[0] + "/slime-image.pth", "w").write("\n".join(sys.argv[1:]) + "\n")' $(call q,$(CURDIR)) $(call q,$(CURDIR)/image) && \
	touch "$$venv/.installed"

DOCKERFILE   ?= slime.Dockerfile

.PHONY: plan
plan: venv ## Predict each pip layer of DOCKERFILE (default slime.Dockerfile; PAIRING=v0.3.0 for another release) and check the result
	@$(reports_dir)
	@$(call array,$(PLAN_ARGS),more); \
	$(VPY) -m tools.planner.plan --dockerfile=$(call q,$(DOCKERFILE)) --platform=$(call q,$(PLATFORM)) $(pairing_opt) \
	  --report-json=$(call q,$(REPORTS)/plan.json) --report-junit=$(call q,$(REPORTS)/plan.xml) "$${more[@]}"

.PHONY: lock
lock: venv ## Re-plan without the lock and rewrite the lock of PAIRING (locks/<pairing>.lock) from the result
	@lock=$$($(VPY) -m tools.inputs.pairings lock $(call q,$(or $(PAIRING),default))) && \
	$(VPY) -m tools.writers --name 'make lock' -- $(VPY) -m tools.planner.plan --platform=$(call q,$(PLATFORM)) $(pairing_opt) --lock "$$lock"

.PHONY: walls
walls: venv ## Where each wall is guarded (WALLS="W13 W22" for some)
	@$(call array,$(WALLS),walls); $(VPY) -m tools.wall_guards "$${walls[@]}"

.PHONY: pairings
pairings: venv ## List the supported slime releases (pairings/), the default marked
	@$(VPY) -m tools.inputs.pairings list

.PHONY: promote
promote: venv ## Make PAIRING the default: slime.Dockerfile's ARG defaults and the docs tables from its TOML
	@$(VPY) -m tools.promote $(call q,$(or $(PAIRING),default))

.PHONY: base-manifest
base-manifest: venv ## Write base-manifests/ for BASE_IMAGE (default: slime.Dockerfile's): its Python and its published weight (needs Docker)
	@$(VPY) -m tools.planner.platforms $(call q,$(PLATFORM)) >/dev/null
	@$(need_engine)
	@base=$(call q,$(BASE_IMAGE)); [ -n "$$base" ] || base=$$($(VPY) -m tools.release.versions get BASE_IMAGE); tmp=$$(mktemp -d); \
	docker manifest inspect -v "$$base" > $$tmp/registry.json && \
	if docker run --rm --platform=$(call q,$(PLATFORM)) --entrypoint python3 "$$base" -m pip inspect --local > $$tmp/inspect.json 2>/dev/null; then \
	  { docker run --rm --platform=$(call q,$(PLATFORM)) --entrypoint cat "$$base" /etc/pip/constraint.txt > $$tmp/constraint.txt 2>/dev/null || true; }; \
	  inspect="--inspect $$tmp/inspect.json --constraint $$tmp/constraint.txt"; \
	else inspect=""; fi && \
	$(VPY) -m tools.planner.base_manifest --image "$$base" $$inspect --registry-manifest $$tmp/registry.json --platform=$(call q,$(PLATFORM)); \
	  status=$$?; rm -rf $$tmp; exit $$status

OVERLAY      ?= h200
RENDERED      = $(call q,$(REPORTS)/manifests-$(OVERLAY).yaml)
overlay       = --overlay=$(call q,$(OVERLAY))
KUBECTL_NS    = $$($(VPY) -m tools.k8s.k8s_render $(overlay) --get NAMESPACE)
need_cluster = $(call need,kubectl,install kubectl (https://kubernetes.io/docs/tasks/tools/)); \
	timeout 10 kubectl cluster-info >/dev/null 2>&1 || { echo "make $@: kubectl reaches no cluster (kubectl cluster-info failed): aws eks update-kubeconfig --name <cluster>" >&2; exit 1; }

.PHONY: render
render: venv ## Print the EKS manifests for OVERLAY=h200|b300|h100 (IMAGE, NAMESPACE, NUM_NODES, FSX_CLAIM required)
	@$(VPY) -m tools.k8s.k8s_render $(overlay)

.PHONY: validate-manifests
validate-manifests: venv ## Render OVERLAY and validate it offline (Kubernetes and KubeRay schemas, yamllint, policies)
	@$(reports_dir)
	@$(VPY) -m tools.k8s.k8s_render $(overlay) --out $(RENDERED) \
	  --report-json=$(call q,$(REPORTS)/render-$(OVERLAY).json) --report-junit=$(call q,$(REPORTS)/render-$(OVERLAY).xml)
	@image=$$($(VPY) -m tools.k8s.k8s_render $(overlay) --get IMAGE) && \
	$(VPY) -m tools.k8s.k8s_validate $(RENDERED) $(overlay) --image "$$image" \
	  --report-json=$(call q,$(REPORTS)/manifests-$(OVERLAY).json) --report-junit=$(call q,$(REPORTS)/manifests-$(OVERLAY).xml)

.PHONY: crds
crds: venv ## Download the KubeRay CRDs the manifest tests validate against into .cache/kuberay-crds
	@$(VPY) -m tools.k8s.kuberay_crds

.PHONY: deploy
deploy: venv ## Apply the RayCluster for OVERLAY to the current cluster
	@$(need_cluster)
	@$(VPY) -m tools.k8s.k8s_nodes $(overlay)
	@$(VPY) -m tools.k8s.k8s_render $(overlay) --only raycluster --out $(RENDERED)
	@kubectl apply -f $(RENDERED)

.PHONY: data-prep
data-prep: venv ## Download the model and datasets onto the shared file system (a Job)
	@$(need_cluster)
	@$(VPY) -m tools.k8s.k8s_render $(overlay) --only data-prep-job --out $(RENDERED)
	@kubectl apply -f $(RENDERED)

.PHONY: preflight
preflight: venv ## Run the smoke suite on one GPU node of OVERLAY as a Job; print its report; exit with its status
	@$(need_cluster)
	@$(VPY) -m tools.k8s.k8s_render $(overlay) --only preflight-job --out $(RENDERED)
	@ns=$(KUBECTL_NS); job=$$(kubectl create -f $(RENDERED) -o name) || exit 1; \
	kubectl -n $$ns wait --for=condition=complete --for=condition=failed --timeout=30m $$job >/dev/null; \
	kubectl -n $$ns logs $$job; \
	failed=$$(kubectl -n $$ns get $$job -o jsonpath='{.status.failed}'); \
	kubectl -n $$ns delete $$job --wait=false >/dev/null; \
	[ -z "$$failed" ] || [ "$$failed" = 0 ]

.PHONY: preflight-p2p
preflight-p2p: venv ## Two GPU nodes of OVERLAY exchange over NCCL and EFA, GPU by GPU (a Job of 2 pods); exit with its status
	@$(need_cluster)
	@$(VPY) -m tools.k8s.k8s_render $(overlay) --only preflight-p2p --out $(RENDERED)
	@ns=$(KUBECTL_NS); made=$$(kubectl create -f $(RENDERED) -o name) || exit 1; job=$$(echo "$$made" | grep '^job'); \
	kubectl -n $$ns wait --for=condition=complete --for=condition=failed --timeout=30m $$job >/dev/null; \
	kubectl -n $$ns logs -l job-name=$${job#*/} --prefix --tail=-1; \
	failed=$$(kubectl -n $$ns get $$job -o jsonpath='{.status.failed}'); \
	kubectl -n $$ns delete $$made --wait=false >/dev/null; \
	[ -z "$$failed" ] || [ "$$failed" = 0 ]

.PHONY: smoke-pod
smoke-pod: venv ## Run the smoke suite (all stages) inside a running Ray GPU worker pod
	@$(need_cluster)
	@ns=$(KUBECTL_NS); pod=$$(kubectl -n $$ns get pods -l app.kubernetes.io/component=ray-gpu-worker -o name | head -1); \
	[ -n "$$pod" ] || { echo "make smoke-pod: no Ray GPU worker pod in namespace $$ns: run make deploy first" >&2; exit 1; }; \
	kubectl -n $$ns exec $$pod -- slime-smoke --stage all

.PHONY: submit
submit: venv ## Submit the Qwen3-4B GRPO job (kubernetes/launch/) through the Ray head pod
	@$(need_cluster)
	@ns=$(KUBECTL_NS); pod=$$(kubectl -n $$ns get pods -l app.kubernetes.io/component=ray-head -o name | head -1); \
	[ -n "$$pod" ] || { echo "make submit: no Ray head pod in namespace $$ns: run make deploy first" >&2; exit 1; }; \
	recipe=$$($(VPY) -m tools.k8s.k8s_render $(overlay) --get LAUNCH_RECIPE) && \
	nodes=$$($(VPY) -m tools.k8s.k8s_render $(overlay) --get NUM_NODES) && \
	allow=$$($(VPY) -m tools.k8s.k8s_render $(overlay) --get ALLOW_OTHER_IMAGE) && \
	versions=$$(mktemp) && trap 'rm -f "$$versions"' EXIT && \
	kubectl -n $$ns exec $$pod -- cat /opt/slime-image/versions.json > "$$versions" && { $(reports_dir); } && \
	$(VPY) -m tools.k8s.grpo_submit --recipe "$$recipe" --num-nodes "$$nodes" --image-versions "$$versions" \
	  $$([ "$$allow" = 1 ] && echo --allow-other-image) $(overlay) \
	  --report-json=$(call q,$(REPORTS)/submit.json) --report-junit=$(call q,$(REPORTS)/submit.xml) -- kubectl -n $$ns exec $$pod -- ray

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
test: venv ## Run the test suite (no Docker, no GPU needed), a worker a core and one more (TEST_WORKERS=)
	@# Checked by make, the value never pasted into the shell: one word, a whole number from 0 to MAX_TEST_WORKERS.
	@$(if $(filter-out 1,$(words $(TEST_WORKERS)))$(filter-out $(shell seq 0 $(MAX_TEST_WORKERS)),$(TEST_WORKERS)),$(bad_test_workers))
	@$(call array,$(PYTEST_ARGS),more); $(VPY) -m pytest -n $(TEST_WORKERS) "$${more[@]}"

.PHONY: lint
lint: venv ## ruff, hadolint, the generated tables of docs/, the pairings and the Dockerfile's rules
	@$(call q,$(VENV)/bin/ruff) check image tools tests benchmarks
	@$(call q,$(VENV)/bin/ruff) format --check image tools tests benchmarks
	@$(call q,$(VENV)/bin/hadolint) -c .hadolint.yaml $$([ -t 1 ] || echo --no-color) slime.Dockerfile
	@$(VPY) -m tools.docs --check
	@$(VPY) -m tools.inputs.pairings check
	@$(reports_dir)
	@$(VPY) -m tools.inputs.rules --report-json=$(call q,$(REPORTS)/rules.json) --report-junit=$(call q,$(REPORTS)/rules.xml)

.PHONY: versions
versions: venv ## Print the version set declared in slime.Dockerfile (of PAIRING, when given)
	@$(VPY) -m tools.release.versions $(pairing_opt) json

.PHONY: tag
tag: venv ## Print the default image tag (of PAIRING, when given)
	@$(VPY) -m tools.release.versions $(pairing_opt) tag

.PHONY: docs
docs: venv ## Regenerate the tables of docs/ (versions, pairings, checks, patches, walls) from their sources
	@$(VPY) -m tools.docs

# The engine `make build` drives (docker with buildx, podman or buildah; empty: the first found) and extra
# NAME=value build arguments for it and make build-check, read as shell words so a quoted value stays one (a mirror:
# BUILD_ARGS="MEGATRON_REPO_URL=... SLIME_REPO_URL=..."). tools/release/build.py works out the rest of the command, as
# the verification build's, and refuses an extra that would change what the image holds under the same tag.
ENGINE       ?=
BUILD_ARGS   ?=
bad_dry_run = echo "make build: DRY_RUN is neither 0 nor 1" >&2; \
	echo "fix: DRY_RUN=1 prints the engine's command; DRY_RUN=0, or unset, builds" >&2; exit 1

.PHONY: build
build: venv ## Build the image IMAGE:TAG for PLATFORM with ENGINE=docker|podman|buildah (default: the first found); DRY_RUN=1 prints the command
	@# DRY_RUN=0 builds, as unset does; any value but 0 and 1 is refused rather than guessed (checked by make).
	@$(if $(filter-out 0 1,$(DRY_RUN) $(words $(DRY_RUN))),$(bad_dry_run))
	@$(VPY) -m tools.release.build $(pairing_opt) $(if $(ENGINE),--engine=$(call q,$(ENGINE))) --platform=$(call q,$(PLATFORM)) \
	  --image=$(call q,$(IMAGE)) $(if $(TAG),--tag=$(call q,$(TAG))) $(if $(BUILD_ARGS),--build-args=$(call q,$(BUILD_ARGS))) $(if $(filter 1,$(DRY_RUN)),--dry-run)

# The git sources of the verification build, each a mirror's path or a URL (default: the Dockerfile's upstream).
MEGATRON_REPO ?=
SLIME_REPO    ?=
APEX_REPO     ?=

.PHONY: build-check
build-check: venv ## Verification build: buildah, a stand-in CUDA base, sources from MEGATRON_REPO/SLIME_REPO/APEX_REPO (path or URL); record in docs/build/
	@$(VPY) -m tools.release.build_check.run $(pairing_opt) $(if $(MEGATRON_REPO),--megatron-repo=$(call q,$(MEGATRON_REPO))) $(if $(SLIME_REPO),--slime-repo=$(call q,$(SLIME_REPO))) $(if $(APEX_REPO),--apex-repo=$(call q,$(APEX_REPO))) \
	  $(if $(BUILD_ARGS),--build-args=$(call q,$(BUILD_ARGS)))
	@$(VPY) -m tools.docs  # the tables that quote the records (docs/benchmarks.md, "What a node pulls")

# The image make build-check made, to compare a second uncached build with (empty: repro-check builds twice).
AGAINST ?=

.PHONY: repro-check
repro-check: venv ## Build the verification build's recipe again without cache and compare every layer; docs/build/<pairing>/reproducibility.json
	@$(VPY) -m tools.release.build_check.repro $(pairing_opt) $(if $(MEGATRON_REPO),--megatron-repo=$(call q,$(MEGATRON_REPO))) $(if $(SLIME_REPO),--slime-repo=$(call q,$(SLIME_REPO))) $(if $(APEX_REPO),--apex-repo=$(call q,$(APEX_REPO))) $(if $(AGAINST),--against=$(call q,$(AGAINST)))

.PHONY: push
push: venv ## Push IMAGE:TAG to ECR (creates the repository when missing), COMPRESSION=gzip or zstd; print the reference with its digest; attach its SBOM as an OCI referrer
	@compression=$(call q,$(COMPRESSION)); case "$$compression" in gzip) ;; zstd) $(call need,skopeo,install skopeo (apt-get install skopeo): docker push writes gzip only) ;; \
	  *) echo "make push: COMPRESSION=$$compression is neither gzip nor zstd" >&2; echo "fix: COMPRESSION=zstd (faster to unpack on a node) or gzip (the default)" >&2; exit 1 ;; esac
	@$(call need,aws,install the AWS CLI v2 (https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html))
	@$(need_tag)
	@$(need_engine)
	@account=$(call q,$(AWS_ACCOUNT_ID)); region=$(call q,$(AWS_REGION)); repo=$(call q,$(ECR_REPOSITORY)); \
	image=$(call q,$(IMAGE):$(TAG)); tag=$(call q,$(TAG)); compression=$(call q,$(COMPRESSION)); \
	if [ -z "$$account" ]; then \
	  account=$$(timeout 20 aws sts get-caller-identity --query Account --output text 2>/dev/null) || \
	    { echo "make push: no AWS credentials ('aws sts get-caller-identity' failed): run 'aws configure' or 'aws sso login', or set AWS_ACCOUNT_ID" >&2; exit 1; }; \
	fi; \
	registry="$$account.dkr.ecr.$$region.amazonaws.com"; \
	docker image inspect "$$image" >/dev/null 2>&1 || { echo "make push: image $$image is not built here: run make build first" >&2; exit 1; }; \
	aws ecr describe-repositories --region "$$region" --repository-names "$$repo" >/dev/null 2>&1 || \
	  aws ecr create-repository --region "$$region" --repository-name "$$repo" >/dev/null || exit 1; \
	aws ecr get-login-password --region "$$region" | docker login --username AWS --password-stdin "$$registry" || exit 1; \
	ref="$$registry/$$repo:$$tag"; \
	if [ "$$compression" = zstd ]; then \
	  skopeo copy -q --dest-compress-format zstd --format oci --dest-creds "AWS:$$(aws ecr get-login-password --region "$$region")" \
	    "docker-daemon:$$image" "docker://$$ref" && \
	  digest=$$(skopeo inspect --creds "AWS:$$(aws ecr get-login-password --region "$$region")" --format '{{.Digest}}' "docker://$$ref") || exit 1; \
	else \
	  docker tag "$$image" "$$ref" && docker push "$$ref" && \
	  digest=$$(docker image inspect --format '{{index .RepoDigests 0}}' "$$ref" | cut -d@ -f2) || exit 1; \
	fi; \
	echo "make push: pushed $$registry/$$repo@$$digest as $$ref ($$compression layers; fingerprint" \
	  "$$(docker image inspect --format '{{index .Config.Labels "org.slime-image.inputs"}}' "$$image"))"; \
	sbom=$$(mktemp) && trap 'rm -f "$$sbom"' EXIT && \
	docker run --rm --entrypoint cat "$$image" /opt/slime-image/sbom.cdx.json > "$$sbom" && \
	aws ecr get-login-password --region "$$region" | \
	  $(VPY) -m tools.release.referrer --image "$$registry/$$repo@$$digest" --sbom "$$sbom" --user AWS

.PHONY: canary
canary: venv ## Run slime-canary (slime's GRPO job with slime's CI assertions, 2 iterations on 1 GPU, about 5 min; CANARY_ARGS=--learn: the policy learns) in the built image; reports in REPORTS/
	@$(need_tag)
	@$(need_engine)
	@image=$(call q,$(IMAGE):$(TAG)); docker image inspect "$$image" >/dev/null 2>&1 || { echo "make canary: image $$image is not built here: run make build, or set IMAGE/TAG" >&2; exit 1; }
	@$(reports_mount)
	@$(call array,$(CANARY_ARGS),more); \
	docker run --rm --gpus 1 --ipc=host --shm-size 16g -v $(call q,$(CURDIR)/$(REPORTS):/reports) $(call q,$(IMAGE):$(TAG)) \
		slime-canary --json /reports/canary.json --junit /reports/canary.xml "$${more[@]}"

.PHONY: smoke-test
smoke-test: venv ## Run the smoke suite (all stages) in the built image on this host's GPUs; reports in REPORTS/
	@$(need_tag)
	@$(need_engine)
	@image=$(call q,$(IMAGE):$(TAG)); docker image inspect "$$image" >/dev/null 2>&1 || { echo "make smoke-test: image $$image is not built here: run make build, or set IMAGE/TAG" >&2; exit 1; }
	@$(reports_mount)
	@docker run --rm --gpus all --ipc=host -v $(call q,$(CURDIR)/$(REPORTS):/reports) $(call q,$(IMAGE):$(TAG)) \
		slime-smoke --stage all --json /reports/smoke.json --junit /reports/smoke.xml
