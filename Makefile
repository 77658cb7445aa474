# drover.fleet: the README's two commands (demo, test) and the steps they share.
# Every step installs what it needs when it is missing, so a fresh Debian machine needs only `make`.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
ROOT := $(abspath .)
VENV ?= $(ROOT)/.venv
PY := $(VENV)/bin/python
export PATH := $(VENV)/bin:$(PATH)
# The repository is the collection: ansible finds it through this folder (a link made by `collection`).
export ANSIBLE_COLLECTIONS_PATH := $(ROOT)/collection/dev
export ANSIBLE_LOCALHOST_WARNING := false
export ANSIBLE_INVENTORY_UNPARSED_WARNING := false
export ANSIBLE_PYTHON_INTERPRETER := $(PY)
PYTEST_ARGS ?=

.PHONY: demo test setup venv engine hostdeps images standin-deps registry collection unit integration sanity molecule docs changelog lint bench clean

demo: setup
	@# The runner pool's GitHub: a stand-in in the background on 127.0.0.1:18766 (stopped at the end), or with
	@# GITHUB_TOKEN set, https://api.github.com (with DEMO_REPOSITORY=owner/name and DEMO_RUNNER_IMAGE).
	if [ -z "$${GITHUB_TOKEN:-}" ]; then hack/standin.sh start --port 18766 --token drover-demo-token --repo demo/pool; fi
	$(VENV)/bin/ansible-playbook -i examples/inventory.ini examples/demo.yml
	@echo '--- second run: nothing to do (changed=0) ---'
	$(VENV)/bin/ansible-playbook -i examples/inventory.ini examples/demo.yml
	@echo '--- the tasks now running on this host ---'
	docker ps --filter label=drover.role=task --filter label=drover.cluster=demo --format 'table {{.Names}}\t{{.Image}}\t{{.Status}}\t{{.Label "drover.cluster"}}'
	@echo '--- the runner pool demo-pool and its slots ---'
	ANSIBLE_CALLBACK_RESULT_FORMAT=yaml $(VENV)/bin/ansible-playbook -i examples/inventory.ini examples/pool_slots.yml
	@echo '--- drain the runner pool, stop the stand-in (the tasks keep running) ---'
	$(VENV)/bin/ansible-playbook -i examples/inventory.ini examples/pool_drain.yml
	if [ -z "$${GITHUB_TOKEN:-}" ]; then hack/standin.sh stop --port 18766; fi

test: setup changelog docs lint unit integration molecule sanity
	@echo 'make test: all suites passed'

setup: venv engine hostdeps images standin-deps collection

venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	touch $@

engine:
	hack/engine.sh

hostdeps:
	hack/hostdeps.sh

images: engine
	hack/images.sh
	hack/runner-image.sh

registry: images
	hack/registry.sh

collection:
	@mkdir -p collection/dev/ansible_collections/drover
	@test -L collection/dev/ansible_collections/drover/fleet || ln -s $(ROOT) collection/dev/ansible_collections/drover/fleet

unit: venv collection standin-deps
	$(PY) -m pytest -q tests/unit $(PYTEST_ARGS)

integration: setup registry
	$(PY) -m pytest -q tests/integration $(PYTEST_ARGS)
	hack/leaks.sh

MODULES := ecs_task ecs_task_info task_netns gpu_pin gpu_info gh_runner_slot gh_runner_info

docs: venv collection
	for m in $(MODULES); do $(VENV)/bin/ansible-doc drover.fleet.$$m >/dev/null; done
	@echo 'docs: ansible-doc renders every module'

changelog: venv
	$(VENV)/bin/antsibull-changelog lint

lint: venv collection
	$(VENV)/bin/ansible-lint --offline --nocolor roles/ playbooks/ awx/

molecule: setup
	$(VENV)/bin/molecule test -s tasks
	$(VENV)/bin/molecule test -s netns
	$(VENV)/bin/molecule test -s runners

sanity: venv
	VENV=$(VENV) hack/sanity.sh

bench: setup
	bench/run.sh

# GitHub's OpenAPI description (npm @octokit/openapi, pinned by its package-lock.json) for the GitHub stand-in
# in tests/fixtures/github_standin; installs npm (Debian's) when missing, and runs npm ci only when needed.
standin-deps:
	command -v npm >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null; }
	cd tests/fixtures/github_standin && if test -f node_modules/@octokit/openapi/generated/api.github.com.json && npm ls --silent >/dev/null 2>&1; then echo 'standin-deps: @octokit/openapi present'; else npm ci --no-audit --no-fund; fi

clean:
	rm -rf collection .pytest_cache
