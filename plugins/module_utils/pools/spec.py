# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Declared runner pools: validation of a gh_runner_slot declaration into a typed spec.

Owns: the rules of a pool declaration (repository or organization, labels, profile, scale, auth) and
their messages, and the runner names of this host.
Must not: touch the host or GitHub. Raises SpecError naming the field.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import collections
import re
import time

from ansible_collections.drover.fleet.plugins.module_utils.pools.plan import IDLE_TIMEOUT
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import NAME_RE, SpecError, check_name
from ansible_collections.drover.fleet.plugins.module_utils.tasks.settings import (
    IMAGE_RE, MIN_MEMORY_MIB, capabilities, check_environment_size)
from ansible_collections.drover.fleet.plugins.module_utils.tasks.spec import registry_auth

# GitHub's names: an owner (user or organization) is 1 to 39 letters, digits and single hyphens, neither first
# nor last; a repository name is 1 to 100 letters, digits, '.', '_' and '-', but not '.' or '..' (both would
# change the API path the name is put in). \Z, not $: '$' also matches before a trailing newline.
OWNER_RE = re.compile(r'^(?=.{1,39}\Z)[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*\Z')
REPO_RE = re.compile(r'^[A-Za-z0-9._-]{1,100}\Z')
# The parts of a runner name, <prefix>-<machine-id>-<profile>-<slot>-<unix-seconds>: a prefix and a machine ID
# have no '-', so the name splits at its first two and last two '-' into exactly these parts.
PREFIX_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.]{0,31}\Z')
MACHINE_ID_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.]{0,63}\Z')
DEFAULT_API_URL = 'https://api.github.com'

Profile = collections.namedtuple('Profile', ('name', 'image', 'cpus', 'memory', 'slots', 'network_mode', 'environment',
                                             'pull', 'registry_auth', 'capabilities', 'records', 'caches', 'gpus',
                                             'docker'))
# A cache: a named volume mounted at `path` in each runner of the pool. Scope slot: a volume of each slot's own,
# written by one runner at a time. Scope pool: a read-only snapshot, seed_from slot1 (slot 1 writes its own volume,
# copied into a new snapshot after a job ran there) or seed_from pool:<name> (that pool's snapshot, read here).
# max_size in MiB, trimmed while its slot is vacant.
Cache = collections.namedtuple('Cache', ('name', 'path', 'scope', 'mode', 'max_size', 'seed_from'))
SEED_SLOT = 'slot1'
SEED_RE = re.compile(r'^(slot1|pool:[a-zA-Z0-9][a-zA-Z0-9_.-]*)\Z')
CACHES_MAX = 16
# A Docker engine for a runner's jobs: none; one of each slot's own, run by an unprivileged user of the slot
# (rootless); or the engine the runner's image brings, inside the runner's container: under the host's Sysbox
# runtime (sysbox), or in a privileged container (privileged, Docker in Docker: only with the host's
# allow_privileged). An engine inside the runner keeps its data in an anonymous volume at /var/lib/docker
# (overlay2 needs a data root that is not itself overlay), removed with the container: a fresh engine per job.
DOCKER_MODES = ('none', 'rootless', 'sysbox', 'privileged')
SYSBOX_RUNTIME = 'sysbox-runc'
INNER_DATA_ROOT = '/var/lib/docker'
GPUS_MAX = 64                   # GPUs pinned to each runner of a profile (from the host's ledger)
# Records of failed jobs: how many a pool keeps (the newest), and for how long (seconds; None: no age limit).
Records = collections.namedtuple('Records', ('keep', 'max_age'))
RECORDS_KEEP = 5
RECORDS_MAX_KEEP = 100
PULL_POLICIES = ('missing', 'always', 'never')
PoolSpec = collections.namedtuple('PoolSpec', (
    'pool', 'repository', 'organization', 'labels', 'runner_group_id', 'profile', 'slots', 'warm', 'scale',
    'idle_timeout', 'name_prefix', 'work_folder', 'state', 'kill_busy', 'api_url', 'auth', 'machine_id',
    'hold_until', 'purge_caches', 'pull_requests_from_forks'))
Auth = collections.namedtuple('Auth', ('token', 'app_id', 'app_private_key', 'installation_id'))


# The options one pool of a `pools` list may set; the call's own options are the default of each.
POOL_KEYS = frozenset((
    'pool', 'repository', 'organization', 'labels', 'runner_group_id', 'profile', 'warm', 'scale', 'idle_timeout',
    'name_prefix', 'machine_id', 'work_folder', 'state', 'kill_busy', 'purge_caches', 'pull_requests_from_forks',
    'hold_until', 'api_url', 'token',
    'app_id', 'app_private_key', 'installation_id', 'github_timeout'))


def owner_of(spec):
    return spec.repository or spec.organization


def host_prefix(spec):
    """What the names of this host's runners start with: prefix plus machine ID."""
    return '%s-%s-' % (spec.name_prefix, spec.machine_id)


def parse_runner_name(name):
    """(prefix, machine ID, profile, slot, unix seconds) of a runner name this collection makes, else None."""
    parts = (name or '').split('-')
    if len(parts) < 5 or not parts[-1].isdigit() or not parts[-2].isdigit():
        return None
    prefix, machine, profile = parts[0], parts[1], '-'.join(parts[2:-2])
    if not PREFIX_RE.match(prefix) or not MACHINE_ID_RE.match(machine) or not NAME_RE.match(profile):
        return None
    return prefix, machine, profile, int(parts[-2]), int(parts[-1])


def host_runner(spec, name, profile=None):
    """Whether `name` is a runner name of this host (its prefix and machine ID exactly, not only as the start
    of a longer machine ID), and of `profile` when one is given."""
    parsed = parse_runner_name(name)
    if parsed is None or parsed[:2] != (spec.name_prefix, spec.machine_id):
        return False
    return profile is None or parsed[2] == profile


def runner_name(spec, slot_index, now):
    """<prefix>-<machine-id>-<profile>-<slot>-<unix-seconds>; slots are numbered from 1."""
    return '%s%s-%d-%d' % (host_prefix(spec), spec.profile.name, slot_index + 1, int(now))


def _profile(raw, allow_host_network=False, allow_privileged=False):
    if not isinstance(raw, dict):
        raise SpecError('profile must be a mapping with name, image, cpus, memory, slots')
    unknown = sorted(set(k for k, v in raw.items() if v is not None) -
                     {'name', 'image', 'cpus', 'memory', 'slots', 'network_mode', 'environment', 'pull', 'registry_auth',
                      'capabilities', 'records', 'caches', 'gpus', 'docker'})
    if unknown:
        raise SpecError('profile has unsupported keys: %s' % ', '.join(unknown))
    name = check_name(raw.get('name'), 'profile.name')
    image = raw.get('image')
    if not isinstance(image, str) or not IMAGE_RE.match(image):
        raise SpecError('profile.image is required and must be an image reference, got %r' % (image,))
    cpus = raw.get('cpus')
    if cpus is not None and (isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or cpus <= 0 or cpus > 512):
        raise SpecError('profile.cpus must be a number of CPUs above 0, got %r' % (cpus,))
    memory = raw.get('memory')
    if memory is not None and (isinstance(memory, bool) or not isinstance(memory, int) or memory < MIN_MEMORY_MIB):
        raise SpecError('profile.memory must be a whole number of MiB, at least %d (the engine\'s minimum), got %r'
                        % (MIN_MEMORY_MIB, memory))
    slots = raw.get('slots')
    if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1 or slots > 256:
        raise SpecError('profile.slots must be a whole number from 1 to 256, got %r' % (slots,))
    mode = raw.get('network_mode') or 'bridge'
    if mode not in ('bridge', 'host', 'none'):
        raise SpecError('profile.network_mode must be bridge, host or none, got %r' % (mode,))
    if mode == 'host' and not allow_host_network:
        raise SpecError('profile.network_mode is host: runner containers (and the jobs in them) would share the '
                        'host\'s network; this host refuses host-network runners unless allow_host_network is true '
                        '(role variable drover_allow_host_network)')
    env = raw.get('environment') or {}
    if not isinstance(env, dict) or any(not isinstance(k, str) or '=' in k for k in env):
        raise SpecError('profile.environment must be a mapping of variable names to values')
    check_environment_size([(k, str(v)) for k, v in env.items()], 'profile.environment')
    pull = raw.get('pull') or 'missing'
    if pull not in PULL_POLICIES:
        raise SpecError('profile.pull must be one of %s, got %r' % (', '.join(PULL_POLICIES), pull))
    auth = registry_auth(raw.get('registry_auth'), 'profile.registry_auth')
    if auth is not None and auth.ecr:
        raise SpecError('profile.registry_auth.ecr is not supported for runner images: give username and password')
    gpus = raw.get('gpus') or 0
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0 or gpus > GPUS_MAX:
        raise SpecError('profile.gpus must be a whole number of GPUs from 0 to %d, got %r' % (GPUS_MAX, raw.get('gpus')))
    docker = raw.get('docker') or 'none'
    if docker not in DOCKER_MODES:
        raise SpecError('profile.docker must be one of %s, got %r' % (', '.join(DOCKER_MODES), docker))
    if docker == 'privileged' and not allow_privileged:
        raise SpecError('profile.docker is privileged: each runner would run privileged (Docker in Docker), and any '
                        'job it runs is root on the host; this host refuses it unless allow_privileged is true (role '
                        'variable drover_allow_privileged); rootless gives each slot an engine without privileges')
    if docker == 'rootless' and mode != 'bridge':
        raise SpecError('profile.docker rootless needs profile.network_mode bridge (the runner joins its slot\'s '
                        'network, where the slot engine publishes ports), got %s' % mode)
    if docker in ('sysbox', 'privileged') and mode != 'bridge':
        raise SpecError('profile.docker %s needs profile.network_mode bridge (the engine inside the runner sets up '
                        'the network the runner has: with host it would be the host\'s), got %s' % (docker, mode))
    return Profile(name, image, cpus, memory, slots, mode, tuple(sorted((k, str(v)) for k, v in env.items())),
                   pull, auth, capabilities(raw.get('capabilities'), 'profile.capabilities'), records(raw.get('records')),
                   caches(raw.get('caches')), gpus, docker)


def caches(raw):
    """profile.caches: a tuple of Cache."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) > CACHES_MAX:
        raise SpecError('profile.caches must be a list of at most %d caches' % CACHES_MAX)
    out, names, paths = [], set(), set()
    for i, item in enumerate(raw):
        at = 'profile.caches[%d]' % i
        if not isinstance(item, dict):
            raise SpecError('%s must be a mapping with name and path' % at)
        unknown = sorted(set(k for k, v in item.items() if v is not None) -
                         {'name', 'path', 'scope', 'mode', 'max_size', 'seed_from'})
        if unknown:
            raise SpecError('%s has unsupported keys: %s' % (at, ', '.join(unknown)))
        name = check_name(item.get('name'), '%s.name' % at)
        path = item.get('path')
        if not isinstance(path, str) or not path.startswith('/') or path.rstrip('/') == '' or \
                any(c in path for c in ':,\n') or any(p in ('.', '..') for p in path.split('/')):
            raise SpecError('%s.path must be an absolute path in the runner other than /, without : , . or .., '
                            'got %r' % (at, path))
        scope = item.get('scope') or 'slot'
        mode = item.get('mode') or ('ro' if scope == 'pool' else 'rw')
        seed_from = item.get('seed_from')
        if scope == 'slot':
            if mode != 'rw':
                raise SpecError('%s.mode must be rw for a slot cache (its slot\'s runner is its one writer), got %r; a '
                                'read-only cache is a pool snapshot (scope pool)' % (at, mode))
            if seed_from is not None:
                raise SpecError('%s.seed_from is for a pool snapshot (scope pool), not a slot cache' % at)
        elif scope == 'pool':
            if mode != 'ro':
                raise SpecError('%s.mode must be ro for a pool snapshot (every slot reads it, no job writes it), got %r'
                                % (at, mode))
            if not isinstance(seed_from, str) or not SEED_RE.match(seed_from):
                raise SpecError('%s.seed_from must be slot1 (a snapshot of slot 1\'s own cache, taken after a job '
                                'ran there) or pool:<name> (the snapshot of another pool of this host), got %r'
                                % (at, seed_from))
        else:
            raise SpecError('%s.scope must be slot or pool, got %r' % (at, scope))
        max_size = item.get('max_size')
        if max_size is not None and (isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1):
            raise SpecError('%s.max_size must be a whole number of MiB, at least 1, got %r' % (at, max_size))
        if max_size is not None and seed_from not in (None, SEED_SLOT):
            raise SpecError('%s.max_size: a snapshot of another pool is trimmed by that pool, not here' % at)
        if name in names:
            raise SpecError('%s.name %s is given twice' % (at, name))
        if path.rstrip('/') in paths:
            raise SpecError('%s.path %s is given twice' % (at, path))
        names.add(name)
        paths.add(path.rstrip('/'))
        out.append(Cache(name, path.rstrip('/'), scope, mode, max_size, seed_from))
    return tuple(out)


def records(raw):
    """profile.records: None (no records), or Records(keep, max_age)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise SpecError('profile.records must be a mapping with keep and max_age, got %r' % (raw,))
    unknown = sorted(set(k for k, v in raw.items() if v is not None) - {'keep', 'max_age'})
    if unknown:
        raise SpecError('profile.records has unsupported keys: %s' % ', '.join(unknown))
    keep = raw.get('keep')
    keep = RECORDS_KEEP if keep is None else keep
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1 or keep > RECORDS_MAX_KEEP:
        raise SpecError('profile.records.keep must be a whole number from 1 to %d, got %r' % (RECORDS_MAX_KEEP, keep))
    max_age = raw.get('max_age')
    if max_age is not None and (isinstance(max_age, bool) or not isinstance(max_age, int) or max_age < 60):
        raise SpecError('profile.records.max_age must be a whole number of seconds, at least 60, got %r' % (max_age,))
    return Records(keep, max_age)


def parse_utc(value, field):
    """A UTC time written YYYY-MM-DDTHH:MM:SSZ (as the events callback writes it) to epoch seconds."""
    if value is None or value == '':
        return None
    try:
        return float(calendar.timegm(time.strptime(str(value), '%Y-%m-%dT%H:%M:%SZ')))
    except ValueError:
        raise SpecError('%s must be a UTC time written YYYY-MM-DDTHH:MM:SSZ, got %r' % (field, value))


def declarations(params):
    """The pools one call declares, as (where, params) pairs: the call itself when it names one `pool`; else
    each entry of `pools` over the call's own options (an entry's value wins). Raises SpecError."""
    entries = params.get('pools')
    if entries is None:
        return [('', params)]
    if params.get('pool') is not None:
        raise SpecError('pool and pools are mutually exclusive: name one pool, or list them in pools')
    if not isinstance(entries, list):
        raise SpecError('pools must be a list of pool declarations')
    out, seen = [], set()
    for index, entry in enumerate(entries):
        where = 'pools[%d]' % index
        if not isinstance(entry, dict):
            raise SpecError('%s must be a mapping (a pool declaration), got %r' % (where, type(entry).__name__))
        unknown = sorted(set(entry) - POOL_KEYS)
        if unknown:
            raise SpecError('%s has unsupported keys: %s' % (where, ', '.join(unknown)))
        merged = dict((k, v) for k, v in params.items() if k not in ('pools', 'purge'))
        merged.update((k, v) for k, v in entry.items() if v is not None)
        name = merged.get('pool')
        if isinstance(name, str):
            where = '%s (pool %s)' % (where, name)
        if isinstance(name, str) and name in seen:
            raise SpecError('%s: the pool is declared more than once' % where)
        seen.add(name if isinstance(name, str) else None)
        out.append((where, merged))
    return out


def pool_spec(params, machine_id):
    """The module's parameters, checked."""
    pool = check_name(params.get('pool'), 'pool')
    repository, organization = params.get('repository'), params.get('organization')
    if repository and organization:
        raise SpecError('repository and organization are mutually exclusive: a pool serves one of them')
    if not repository and not organization:
        raise SpecError('repository (owner/name) or organization is required')
    if repository:
        parts = repository.split('/') if isinstance(repository, str) else []
        if len(parts) != 2 or not OWNER_RE.match(parts[0]) or not REPO_RE.match(parts[1]) \
                or parts[1] in ('.', '..'):
            raise SpecError('repository must be owner/name, got %r: GitHub names, the owner up to 39 letters, digits '
                            'and single hyphens, not first or last, the name up to 100 letters, digits, ".", "_" or '
                            '"-", not "." or ".."' % (repository,))
    if organization and (not isinstance(organization, str) or not OWNER_RE.match(organization)):
        raise SpecError('organization %r is not a valid GitHub organization name (up to 39 letters, digits and '
                        'single hyphens, not first or last)' % (organization,))
    if not isinstance(machine_id, str) or not MACHINE_ID_RE.match(machine_id):
        raise SpecError('machine_id must be 1 to 64 letters, digits, "_" or ".", starting with a letter or digit '
                        '(no "-": it is the second part of every runner name), got %r' % (machine_id,))
    state = params.get('state') or 'present'
    labels = params.get('labels') or []
    if state == 'present' and not labels:
        raise SpecError('labels must name at least one label (GitHub registers no runner without one)')
    if any(not isinstance(l, str) or not l.strip() or ',' in l for l in labels):
        raise SpecError('labels must be non-empty strings without commas')
    if len(labels) > 100:
        raise SpecError('labels may name at most 100 labels')
    if state == 'present' and not params.get('profile'):
        raise SpecError('profile is required with state present: name, image and slots of the runner containers')
    profile = _profile(params.get('profile'), state != 'present' or bool(params.get('allow_host_network')),
                       state != 'present' or bool(params.get('allow_privileged'))) \
        if state == 'present' or params.get('profile') else None
    forks = bool(params.get('pull_requests_from_forks'))
    for i, cache in enumerate(profile.caches if profile else ()):
        if cache.seed_from == 'pool:' + pool:
            raise SpecError('profile.caches[%d].seed_from names the pool itself: a pool snapshot seeded from this pool '
                            'is seed_from slot1' % i)
        if forks and (cache.scope != 'pool' or cache.seed_from == SEED_SLOT):
            raise SpecError('profile.caches[%d]: a pool with pull_requests_from_forks takes read-only caches only, '
                            'a snapshot of another pool (scope pool, seed_from pool:<name>): a job of a fork must '
                            'never write what a later job reads' % i)
    slots = profile.slots if profile else 0
    warm = params.get('warm')
    warm = 1 if warm is None else warm
    if isinstance(warm, bool) or not isinstance(warm, int) or warm < 0:
        raise SpecError('warm must be a whole number of at least 0, got %r' % (warm,))
    idle_timeout = params.get('idle_timeout')
    idle_timeout = IDLE_TIMEOUT if idle_timeout is None else idle_timeout
    if isinstance(idle_timeout, bool) or not isinstance(idle_timeout, int) or idle_timeout < 1:
        raise SpecError('idle_timeout must be a whole number of seconds of at least 1, got %r' % (idle_timeout,))
    group = params.get('runner_group_id')
    group = 1 if group is None else group
    if isinstance(group, bool) or not isinstance(group, int) or group < 1:
        raise SpecError('runner_group_id must be a whole number of at least 1, got %r' % (group,))
    prefix = params.get('name_prefix') or 'drover'
    if not isinstance(prefix, str) or not PREFIX_RE.match(prefix):
        raise SpecError('name_prefix must be up to 32 letters, digits, "_" or ".", got %r' % prefix)
    token = params.get('token')
    app = (params.get('app_id'), params.get('app_private_key'), params.get('installation_id'))
    if token and any(a is not None for a in app):
        raise SpecError('token and GitHub App credentials (app_id, app_private_key, installation_id) are mutually '
                        'exclusive: give one of them')
    if not token:
        if any(a is None for a in app):
            raise SpecError('GitHub auth: give token, or all of app_id, app_private_key and installation_id')
        if '-----BEGIN' not in str(app[1]):
            raise SpecError('app_private_key must be the App\'s PEM private key')
    api_url = (params.get('api_url') or DEFAULT_API_URL).rstrip('/')
    if not re.match(r'^https?://[^\s/]+(?:/\S*)?\Z', api_url):
        raise SpecError('api_url must be an http(s) URL, got %r' % api_url)
    return PoolSpec(
        pool=pool, repository=repository, organization=organization, labels=tuple(labels),
        runner_group_id=group, profile=profile, slots=slots, warm=warm, scale=params.get('scale') or 'queued',
        idle_timeout=idle_timeout, name_prefix=prefix, work_folder=params.get('work_folder') or '_work',
        state=state, kill_busy=bool(params.get('kill_busy')), api_url=api_url,
        auth=Auth(token, app[0], app[1], app[2]), machine_id=machine_id,
        hold_until=parse_utc(params.get('hold_until'), 'hold_until'), purge_caches=bool(params.get('purge_caches')),
        pull_requests_from_forks=forks)


def inner_engine(docker):
    """The runner container's settings for an engine inside it (profile.docker sysbox or privileged): (host
    config, container config) for the engine's create, or (None, None) for any other mode."""
    if docker == 'sysbox':
        return {'runtime': SYSBOX_RUNTIME}, {'volumes': [INNER_DATA_ROOT]}
    if docker == 'privileged':
        return {'privileged': True}, {'volumes': [INNER_DATA_ROOT]}
    return None, None
