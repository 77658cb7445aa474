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

.PHONY: demo demo-salt test test-suites static setup leftovers venv salt-venv salt engine hostdeps images standin-deps registry collection unit integration integration-sanity sanity molecule galaxy faults faults-ci docs docsite changelog lint bench clean

DEMO := $(VENV)/bin/ansible-playbook -i examples/inventory.yml
DEMO_DIR := /tmp/drover-demo
# The events callback for every demo run: its event log and its fleet-wide holds in DEMO_DIR.
DEMO_ENV := ANSIBLE_CALLBACKS_ENABLED=drover.fleet.events DROVER_EVENTS_LOG_PATH=$(DEMO_DIR)/events.jsonl \
	DROVER_EVENTS_FLEET_STATE_PATH=$(DEMO_DIR)/fleet-holds.json

demo: setup
	@# The runner pool's GitHub: a stand-in in the background on 127.0.0.1:18766 (stopped at the end), or with
	@# GITHUB_TOKEN set, https://api.github.com (with DEMO_REPOSITORY=owner/name and DEMO_RUNNER_IMAGE).
	rm -rf $(DEMO_DIR) && mkdir -p $(DEMO_DIR)
	if [ -z "$${GITHUB_TOKEN:-}" ]; then hack/standin.sh start --port 18766 --token drover-demo-token --repo demo/pool; fi
	hack/demo-eni.sh up
	@echo '--- converge examples/inventory.yml: the task hosts and the runner hosts (this machine is both) ---'
	$(DEMO_ENV) $(DEMO) drover.fleet.converge
	@echo '--- converge again: nothing to do (changed=0) ---'
	$(DEMO_ENV) $(DEMO) drover.fleet.converge
	if [ -n "$(DEMO_SALT)" ]; then DEMO_DIR=$(DEMO_DIR) SALT_VENV=$(SALT_VENV) PY=$(PY) $(DEMO_ENV) hack/demo-salt.sh; fi
	@echo '--- the containers of the demo tasks on this host ---'
	docker ps --filter label=drover.cluster=demo --format 'table {{.Names}}\t{{.Image}}\t{{.Status}}\t{{.Label "drover.task"}}'
	@echo '--- the instances of the demo service (drover_services: demo-svc, 2 placed on this host) ---'
	docker ps --filter label=drover.cluster=demo-services --format 'table {{.Names}}\t{{.Status}}\t{{.Label "drover.task"}}'
	@echo '--- inside the tasks, and the runner pool demo-pool and its slots ---'
	ANSIBLE_CALLBACK_RESULT_FORMAT=yaml $(DEMO) examples/show.yml
	@echo '--- the web task dies: kill its container, then one reconcile pass reaps and restarts it ---'
	docker kill demo-web-httpd
	$(DEMO_ENV) $(DEMO) drover.fleet.reconcile
	@echo '--- the events the reconcile pass logged ($(DEMO_DIR)/events.jsonl) ---'
	tail -n 2 $(DEMO_DIR)/events.jsonl
	@echo '--- tear the demo down: nothing declared any more, so the tasks are purged and the pool drained ---'
	@# (a service is scaled to 0 before it is no longer declared, as ECS deletes one: its instances then stop)
	$(DEMO_ENV) $(DEMO) drover.fleet.reconcile -e '{"drover_tasks": [], "drover_pools": [], "drover_services": [{"name": "demo-svc", "cluster": "demo-services", "desired_count": 0}]}'
	hack/demo-eni.sh down
	if [ -z "$${GITHUB_TOKEN:-}" ]; then hack/standin.sh stop --port 18766; fi

# The demo with Salt in the middle (docs/salt.md): after the Ansible converges, the same fleet converged by
# `salt-call --local state.apply drover` from a pillar written from the same inventory (hack/demo-salt.sh).
demo-salt: setup salt-venv
	$(MAKE) demo DEMO_SALT=1

# The suites of `make test`, in order (TEST_SUITES='unit integration' runs some of them the same way). `static`:
# the suites that need no engine (changelog, docs, lint, unit, the docs site), and the Salt suite's venv, made at
# once. `integration-sanity`: the integration suite, with sanity beside it.
TEST_SUITES ?= setup leftovers static salt integration-sanity faults-ci molecule galaxy

static:
	$(MAKE) --no-print-directory -j3 -Otarget changelog docs lint unit salt-venv ee docsite

# What an execution environment gets of the collection (ansible-builder introspect and create, offline).
ee: venv collection
	VENV=$(VENV) hack/ee-check.sh

# The suites run in a make of their own; then the test registry they start (hack/registry.sh) is stopped,
# whether they passed or failed, unless it was already running before `make test` (then it is left running).
# The exit status is the suites'.
test:
	@if hack/registry.sh status >/dev/null 2>&1; then was_up=1; else was_up=0; fi; \
	stop_ours() { [ "$$was_up" = 1 ] || hack/registry.sh stop || echo 'make test: the registry did not stop' >&2; }; \
	trap 'stop_ours; exit 130' INT TERM; \
	rc=0; $(MAKE) --no-print-directory test-suites || rc=$$?; \
	trap - INT TERM; \
	stop_ours; \
	if [ "$$rc" = 0 ]; then echo 'make test: all suites passed'; fi; \
	exit "$$rc"

test-suites: $(TEST_SUITES)

setup: venv engine hostdeps images standin-deps collection

venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt requirements-runtime.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	touch $@

# The Salt extension (salt/, docs/salt.md) in a venv of its own: Salt's dependencies are not the Ansible venv's.
SALT_VENV ?= $(ROOT)/.venv-salt
salt-venv: $(SALT_VENV)/.installed
$(SALT_VENV)/.installed: salt/requirements.txt salt/pyproject.toml
	test -x $(SALT_VENV)/bin/python || python3 -m venv $(SALT_VENV)
	$(SALT_VENV)/bin/python -m pip install -q --upgrade pip
	$(SALT_VENV)/bin/python -m pip install -q -r salt/requirements.txt
	$(SALT_VENV)/bin/python -m pip install -q -e salt/
	touch $@

# The Salt suite (tests/salt): salt-call --local from the Salt venv, driven by this venv's pytest (which also runs
# the Ansible module on the same declarations), on the real engine and the GitHub stand-in.
salt: setup salt-venv
	DROVER_SALT_VENV=$(SALT_VENV) $(PY) -m pytest -q tests/salt $(PYTEST_ARGS)
	hack/leaks.sh

engine:
	hack/engine.sh

# What a run of the suites killed midway left on this host (test clusters' and pools' containers, volumes, netns,
# links, rules, records) is removed before the suites, each named; the leak check after each suite stays strict.
leftovers: engine
	hack/leaks.sh --remove

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

# The integration suite in three pytest sessions at once (the tasks', the runner pools' and the simulated hosts'
# files), then the files that must run alone: hack/integration.sh says why.
integration: setup registry
	PY=$(PY) hack/integration.sh $(PYTEST_ARGS)
	hack/leaks.sh

# The integration suite with sanity beside it, at the lowest CPU priority (nice 19): sanity needs no engine and
# shares nothing with the tests, and it takes the CPU the integration sessions leave idle (their last minutes are
# one session on two cores) instead of running alone after them. Its output is printed once both have ended; the
# exit status is the integration suite's, else sanity's.
integration-sanity: setup registry venv
	@log=$$(mktemp); \
	nice -n 19 $(MAKE) --no-print-directory sanity >"$$log" 2>&1 & sanity=$$!; \
	rc=0; $(MAKE) --no-print-directory integration || rc=$$?; \
	src=0; wait "$$sanity" || src=$$?; \
	echo "=== sanity (exit $$src) ==="; cat "$$log"; rm -f "$$log"; \
	if [ "$$rc" != 0 ]; then exit "$$rc"; fi; exit "$$src"

MODULES := ecs_task ecs_task_info task_netns gpu_pin gpu_info gh_runner_slot gh_runner_info host_info validate_roles service_placement
FILTERS := ecs_placeholders ecs_render

docs: venv collection
	for m in $(MODULES); do $(VENV)/bin/ansible-doc drover.fleet.$$m >/dev/null; done
	for f in $(FILTERS); do $(VENV)/bin/ansible-doc -t filter drover.fleet.$$f >/dev/null; done
	@echo 'docs: ansible-doc renders every module and filter'

# The docs as a site (build/docsite/html/index.html), its docs linted, then opened in a headless browser (Debian's
# chromium, installed here when missing): tests/docsite.
docsite: venv collection
	command -v chromium >/dev/null 2>&1 || { apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium >/dev/null; }
	VENV=$(VENV) hack/docsite.sh
	$(PY) -m pytest -q -p no:cacheprovider tests/docsite $(PYTEST_ARGS)

changelog: venv
	$(VENV)/bin/antsibull-changelog lint

lint: venv collection
	$(VENV)/bin/ansible-lint --offline --nocolor roles/ playbooks/ awx/ extensions/eda/

molecule: setup
	$(VENV)/bin/molecule test -s tasks
	$(VENV)/bin/molecule test -s netns
	$(VENV)/bin/molecule test -s runners
	$(VENV)/bin/molecule test -s reconcile

# Faults (tests/faults): modules killed at random moments, converges and reconciles racing, GitHub fault
# bursts, the engine restarted, bad declarations and role variables, a damaged store. make test runs a few
# trials; `make faults` the long run (FAULT_TRIALS, FAULT_RACES: 20 each, FAULT_RESTARTS: 3; FAULT_SEED to
# replay a failure: every trial prints it).
FAULT_TRIALS ?= 20
FAULT_RACES ?= 20
FAULT_RESTARTS ?= 3
faults-ci: setup
	FAULT_TRIALS=2 FAULT_RACES=2 FAULT_RESTARTS=1 $(PY) -m pytest -q tests/faults $(PYTEST_ARGS)
	hack/leaks.sh

faults: setup
	FAULT_TRIALS=$(FAULT_TRIALS) FAULT_RACES=$(FAULT_RACES) FAULT_RESTARTS=$(FAULT_RESTARTS) \
	  $(PY) -m pytest -q tests/faults $(PYTEST_ARGS)
	hack/leaks.sh

# ansible-galaxy collection build + install, and the installed collection's playbooks run by their FQCN
galaxy: setup
	VENV=$(VENV) hack/galaxy-check.sh

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
