# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Docker engine adapter: the only place that talks to the engine.

Owns: connecting (with a timeout), one labelled listing per pass, inspect, logs, pull with registry
credentials, create/start with labels, remove (kill, then delete), engine volumes (create, inspect, list by
label, remove), and what the engine says of its cgroups (driver, version). Every engine error is wrapped in
EngineError with what was being done.
Must not: decide anything, read or write the store, or see a declaration: it takes plain values.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import io
import tarfile
import traceback

try:
    import docker
    from docker import errors as docker_errors
    from docker.utils import parse_repository_tag
    HAS_DOCKER = True
    DOCKER_IMPORT_ERROR = None
except ImportError:  # pragma: no cover - reported through missing_required_lib
    HAS_DOCKER = False
    DOCKER_IMPORT_ERROR = traceback.format_exc()

ROLE_LABEL = 'drover.role'
DEFAULT_TIMEOUT = 60


class EngineUnavailable(Exception):
    """The engine cannot be reached at all: nothing was done."""


class EngineError(Exception):
    """One engine call failed; the message says which and why."""


def _explain(exc):
    """An engine error in one line: the engine's own explanation when it gave one."""
    explanation = getattr(exc, 'explanation', None)
    if explanation:
        if isinstance(explanation, bytes):
            explanation = explanation.decode('utf-8', 'replace')
        return str(explanation).strip()
    return str(exc).strip() or exc.__class__.__name__


def split_image(ref):
    """('registry host' or None, repository, tag or digest) of an image reference; tag defaults to latest."""
    repo, tag = parse_repository_tag(ref)
    first = repo.split('/', 1)[0]
    registry = first if '/' in repo and ('.' in first or ':' in first or first == 'localhost') else None
    return registry, repo, tag or 'latest'


def listed_ports(rows):
    """A listing's `Ports` of one container: those published on the host, as (bind address, container port, host
    port, protocol), sorted (a port published on IPv4 and IPv6 is two)."""
    out = set()
    for row in rows or ():
        if isinstance(row, dict) and row.get('PublicPort'):
            out.add((row.get('IP') or '', int(row['PrivatePort']), int(row['PublicPort']), row.get('Type') or 'tcp'))
    return sorted(out)


def inspected_ports(ports):
    """An inspect's NetworkSettings.Ports ({'8080/tcp': [{'HostIp', 'HostPort'}] or None}) as list_role's `ports`."""
    out = set()
    for key, bound in (ports or {}).items():
        port, dummy, proto = str(key).partition('/')
        for row in bound or ():
            if isinstance(row, dict) and row.get('HostPort'):
                out.add((row.get('HostIp') or '', int(port), int(row['HostPort']), proto or 'tcp'))
    return sorted(out)


def listed_health(status):
    """The health of a container from the Status of the engine's listing ('Up 3 seconds (healthy)', 'Up 1 second
    (health: starting)', 'Up 2 minutes (unhealthy)'): healthy, unhealthy, starting, or None."""
    text = status or ''
    for word in ('(unhealthy)', '(healthy)', '(health: starting)'):
        if text.endswith(word):
            return word.strip('()').replace('health: ', '')
    return None


class Engine:
    """A connection to one Docker engine."""

    def __init__(self, base_url=None, timeout=DEFAULT_TIMEOUT):
        self.base_url = base_url
        try:
            if base_url:
                self.client = docker.DockerClient(base_url=base_url, timeout=timeout)
            else:
                self.client = docker.DockerClient.from_env(timeout=timeout)
            self.api = self.client.api
            # The client asked the engine for its API version on connecting: it answers.
            self._version = None
        except Exception as exc:
            raise EngineUnavailable('the Docker engine at %s cannot be reached (%s); start it (dockerd) '
                                    'or set docker_host' % (base_url or 'the default socket', _explain(exc)))

    def close(self):
        self.client.close()

    @property
    def version(self):
        if self._version is None:
            self._version = self.api.version()
        return self._version

    def supports_cdi(self):
        """CDI device names in device requests came with Docker Engine 25 (API 1.44)."""
        try:
            major = int(str(self.version.get('Version', '0')).split('.', maxsplit=1)[0])
        except ValueError:
            major = 0
        return major >= 25

    def _info(self):
        """The engine's info, asked once per connection."""
        if getattr(self, '_info_cache', None) is None:
            try:
                self._info_cache = self.api.info()
            except Exception as exc:
                raise EngineError('engine info: %s' % _explain(exc))
        return self._info_cache

    def volume_drivers(self):
        """The volume drivers of the engine: 'local' and its volume plugins."""
        return sorted(set(['local'] + list((self._info().get('Plugins') or {}).get('Volume') or [])))

    def capacity(self):
        """What the engine's host has: {'cpu': CPU units (1,024 a core), 'memory': MiB}."""
        info = self._info()
        return {'cpu': int(info.get('NCPU') or 0) * 1024, 'memory': int(info.get('MemTotal') or 0) // (1 << 20)}

    def runtimes(self):
        """The names of the engine's OCI runtimes (runc, and sysbox-runc where Sysbox is installed)."""
        return sorted((self._info().get('Runtimes') or {}).keys())

    def cgroups(self):
        """(cgroup driver, cgroup version) of the engine: ('cgroupfs', 1), ('systemd', 2)..."""
        info = self._info()
        try:
            version = int(info.get('CgroupVersion') or 1)
        except ValueError:
            version = 1
        return info.get('CgroupDriver') or 'cgroupfs', version

    def describe(self):
        return 'Docker %s (API %s)' % (self.version.get('Version'), self.version.get('ApiVersion'))

    # --- reading ---------------------------------------------------------------------------------

    def list_role(self, role=None):
        """Every container, running or not, labelled with `drover.role=<role>` (any role when None): one
        engine call.

        Each is a dict: id, name, labels, state (running, exited, created, ...), image, created (epoch), health (the
        status of a running container's health check, as the listing shows it: starting, healthy, unhealthy; None
        without one), ports (its ports published on the host: (bind address, container port, host port, protocol),
        sorted).
        """
        label = ROLE_LABEL if role is None else '%s=%s' % (ROLE_LABEL, role)
        try:
            rows = self.api.containers(all=True, filters={'label': label})
        except Exception as exc:
            raise EngineError('list containers: %s' % _explain(exc))
        out = []
        for row in rows:
            names = row.get('Names') or ['']
            out.append({
                'id': row['Id'],
                'name': names[0].lstrip('/'),
                'labels': row.get('Labels') or {},
                'state': row.get('State') or '',
                'image': row.get('Image') or '',
                'created': row.get('Created'),
                'health': listed_health(row.get('Status')),
                'ports': listed_ports(row.get('Ports')),
            })
        return out

    def inspect(self, container_id):
        """The container's state: exit_code, oom_killed, started_at, finished_at, error, health (the status of its
        health check: starting, healthy, unhealthy; None without one); None if gone."""
        try:
            info = self.api.inspect_container(container_id)
        except docker_errors.NotFound:
            return None
        except Exception as exc:
            raise EngineError('inspect container %s: %s' % (container_id[:12], _explain(exc)))
        state = info.get('State') or {}
        return {
            'status': state.get('Status'),
            'pid': state.get('Pid') or None,
            'exit_code': state.get('ExitCode'),
            'oom_killed': bool(state.get('OOMKilled')),
            'started_at': state.get('StartedAt'),
            'finished_at': state.get('FinishedAt'),
            'error': state.get('Error') or None,
            'health': (state.get('Health') or {}).get('Status') or None,
            # its ports published on the host, as list_role's `ports`
            'ports': inspected_ports((info.get('NetworkSettings') or {}).get('Ports')),
            'address': (info.get('NetworkSettings') or {}).get('IPAddress') or None,     # on the default bridge
            # {network name: the container's address there}
            'networks': dict((name, (net or {}).get('IPAddress') or None) for name, net in (
                (info.get('NetworkSettings') or {}).get('Networks') or {}).items()),
        }

    def logs(self, container_id, tail='all'):
        try:
            return self.api.logs(container_id, stdout=True, stderr=True, tail=tail).decode('utf-8', 'replace')
        except docker_errors.NotFound:
            return None
        except Exception as exc:
            raise EngineError('logs of container %s: %s' % (container_id[:12], _explain(exc)))

    def log_config(self, container_id):
        """The container's log configuration as the engine holds it ({'Type', 'Config'}); None if gone."""
        try:
            return self.api.inspect_container(container_id)['HostConfig'].get('LogConfig')
        except docker_errors.NotFound:
            return None
        except Exception as exc:
            raise EngineError('inspect container %s: %s' % (container_id[:12], _explain(exc)))

    def given_values(self, container_id):
        """The values a container was given beyond its image's: its environment's values (secrets, environment
        files, credentials) less those its image sets itself, and its log options' (secret options). None if gone."""
        try:
            info = self.api.inspect_container(container_id)
            try:
                image_env = set((self.api.inspect_image(info['Image']).get('Config') or {}).get('Env') or ())
            except docker_errors.NotFound:
                image_env = set()
        except docker_errors.NotFound:
            return None
        except Exception as exc:
            raise EngineError('inspect container %s: %s' % (container_id[:12], _explain(exc)))
        env = [item for item in (info.get('Config') or {}).get('Env') or () if item not in image_env]
        values = [item.split('=', 1)[1] for item in env if '=' in item]
        options = ((info.get('HostConfig') or {}).get('LogConfig') or {}).get('Config') or {}
        return values + [v for v in options.values() if isinstance(v, str)]

    def image_present(self, ref):
        return self._image(ref) is not None

    def _image(self, ref):
        """The engine's view of an image, or None when it has no such image."""
        try:
            return self.api.inspect_image(ref)
        except docker_errors.NotFound:
            return None
        except Exception as exc:
            raise EngineError('inspect image %s: %s' % (ref, _explain(exc)))

    def image_workdir(self, ref):
        """(the image's ID, its working directory or ''), or None when the engine has no such image."""
        found = self._image(ref)
        return None if found is None else (found['Id'], (found.get('Config') or {}).get('WorkingDir') or '')

    def image_user(self, ref):
        """The user an image's containers run as (its Config.User: '' for root), or None without the image."""
        found = self._image(ref)
        return None if found is None else (found.get('Config') or {}).get('User') or ''

    @contextlib.contextmanager
    def unstarted(self, image, labels):
        """A container made from `image` and never started (what is copied out of an image comes through one),
        removed afterwards."""
        box = self.create(None, image, labels, entrypoint=['/'], command=[], network_mode='none')
        try:
            yield box
        finally:
            self.remove(box)

    def image_files(self, image, paths, labels, limit=1024 * 1024):
        """{path: its text} of small plain files of an image (each at most `limit` bytes; a path the image lacks, or
        that is not a plain file, is left out), read from a container made from it and never started."""
        out, most = {}, limit + 64 * 1024           # (an archive of one file: the file and its headers)
        try:
            with self.unstarted(image, labels) as box:
                for path in paths:
                    stream = self.archive(box, path)
                    if stream is None:
                        continue
                    raw = bytearray()
                    for chunk in stream:
                        raw += chunk
                        if len(raw) > most:
                            break       # (a file past the limit is left out: its archive is not read whole)
                    getattr(stream, 'close', lambda: None)()
                    if len(raw) > most:
                        continue
                    with tarfile.open(fileobj=io.BytesIO(bytes(raw)), mode='r:') as tar:
                        member = tar.next()
                        if member is not None and member.isreg() and member.size <= limit:
                            out[path] = tar.extractfile(member).read().decode('utf-8', 'replace')
        except tarfile.TarError as exc:
            raise EngineError('read %s of %s: %s' % (', '.join(paths), image, exc))
        return out

    def archive(self, container_id, path):
        """A tar stream (chunks) of `path` in a container's filesystem, or None where it has no such path."""
        try:
            stream, dummy = self.api.get_archive(container_id, path)
        except docker_errors.NotFound:
            return None
        except Exception as exc:
            raise EngineError('copy %s out of %s: %s' % (path, container_id[:12], _explain(exc)))
        return stream

    # --- changing --------------------------------------------------------------------------------

    def pull(self, ref, auth=None):
        """Pull one image (one tag, never all of a repository's tags). `auth`: dict username/password."""
        registry, repo, tag = split_image(ref)
        try:
            if tag.startswith('sha256:'):
                self.api.pull(repo + '@' + tag, auth_config=auth)
            else:
                self.api.pull(repo, tag=tag, auth_config=auth)
        except Exception as exc:
            raise EngineError(_explain(exc))
        if not self.image_present(ref):
            raise EngineError('%s is not on the host after the pull' % ref)

    def create(self, name, image, labels, command=None, entrypoint=None, environment=None, cpu_shares=None,
               memory_mib=None, ports=None, network_mode=None, dns=None, device_requests=None, binds=None,
               cpus=None, cap_add=None, cap_drop=None, config=None, host=None):
        """Create one container; `ports` is a list of (container_port, host_port or None, protocol); `cap_add`
        and `cap_drop`: Linux capability names (NET_RAW) given to or taken from the engine's default set.
        `config` and `host`: further keyword arguments of the Docker SDK's create_container and
        create_host_config, as plain values (a task container's settings, rendered from their table)."""
        bindings = {}
        exposed = []
        for cport, hport, proto in ports or ():
            key = '%d/%s' % (cport, proto)
            exposed.append((cport, proto))
            bindings[key] = hport
        extra = dict((k, v) for k, v in (host or {}).items() if v is not None)
        if 'ulimits' in extra:
            extra['ulimits'] = [docker.types.Ulimit(**u) for u in extra['ulimits']]
        if 'log_config' in extra:
            extra['log_config'] = docker.types.LogConfig(**extra['log_config'])
        base = dict(
            port_bindings=bindings or None,
            cpu_shares=cpu_shares,
            mem_limit='%dm' % memory_mib if memory_mib else None,
            network_mode=network_mode,
            dns=list(dns) if dns else None,
            device_requests=[docker.types.DeviceRequest(**r) for r in device_requests] if device_requests else None,
            binds=list(binds) if binds else None,
            nano_cpus=int(cpus * 1e9) if cpus else None,
            cap_add=list(cap_add) if cap_add else None,
            cap_drop=list(cap_drop) if cap_drop else None,
        )
        base.update(extra)
        host_config = self.api.create_host_config(**base)
        more = dict((k, v) for k, v in (config or {}).items() if v is not None)
        if 'healthcheck' in more:
            more['healthcheck'] = docker.types.Healthcheck(**more['healthcheck'])
        try:
            call = dict(image=image, name=name, labels=labels, command=list(command) if command is not None else None,
                        entrypoint=list(entrypoint) if entrypoint is not None else None,
                        environment=dict(environment or {}), host_config=host_config,
                        ports=exposed or None, detach=True)
            call.update(more)
            created = self.api.create_container(**call)
        except Exception as exc:
            raise EngineError(_explain(exc))
        return created['Id']

    def start(self, container_id):
        try:
            self.api.start(container_id)
        except Exception as exc:
            raise EngineError(_explain(exc))

    def stop(self, container_id, timeout):
        """Stop with a grace period: the stop signal, then the kill after `timeout` seconds."""
        try:
            self.api.stop(container_id, timeout=timeout)
        except docker_errors.NotFound:
            return False
        except Exception as exc:
            raise EngineError('stop container %s: %s' % (container_id[:12], _explain(exc)))
        return True

    def remove(self, container_id):
        """Kill, then delete; a container already gone is not an error."""
        try:
            self.api.remove_container(container_id, force=True, v=True)
        except docker_errors.NotFound:
            return False
        except Exception as exc:
            raise EngineError('remove container %s: %s' % (container_id[:12], _explain(exc)))
        return True

    # --- records (images committed from containers) ---------------------------------------------

    def diff(self, container_id):
        """The paths a container's filesystem changed (added, changed or deleted), its mounts aside; None if gone."""
        try:
            return [d.get('Path') for d in self.api.diff(container_id) or () if d.get('Path')]
        except docker_errors.NotFound:
            return None
        except Exception as exc:
            raise EngineError('diff of container %s: %s' % (container_id[:12], _explain(exc)))

    def commit(self, container_id, repository, tag, labels):
        """Commit a container's filesystem as image repository:tag, `labels` over the container's own; its ID."""
        try:
            return self.api.commit(container_id, repository=repository, tag=tag, conf={'Labels': labels})['Id']
        except Exception as exc:
            raise EngineError('commit container %s: %s' % (container_id[:12], _explain(exc)))

    def images_labelled(self, labels):
        """Images with every label of `labels` ({name: value}): each {id, tags, labels, created (epoch)}."""
        try:
            rows = self.api.images(filters={'label': ['%s=%s' % kv for kv in sorted(labels.items())]})
        except Exception as exc:
            raise EngineError('list images: %s' % _explain(exc))
        return [{'id': r['Id'], 'tags': [t for t in r.get('RepoTags') or () if t != '<none>:<none>'],
                 'labels': r.get('Labels') or {}, 'created': r.get('Created'), 'size': r.get('Size')} for r in rows]

    def remove_image(self, ref):
        """Delete an image (by ID or reference); one already gone is not an error."""
        try:
            self.api.remove_image(ref, force=True)
        except docker_errors.NotFound:
            return False
        except Exception as exc:
            raise EngineError('remove image %s: %s' % (ref, _explain(exc)))
        return True

    # --- networks --------------------------------------------------------------------------------

    def network(self, name):
        """An engine network: {id, name, driver, internal, labels, containers (their IDs)}; None when there is none
        of that name."""
        try:
            info = self.api.inspect_network(name)
        except docker_errors.NotFound:
            return None
        except Exception as exc:
            raise EngineError('inspect network %s: %s' % (name, _explain(exc)))
        return {'id': info.get('Id'), 'name': info.get('Name'), 'driver': info.get('Driver'),
                'internal': bool(info.get('Internal')), 'labels': info.get('Labels') or {},
                'containers': sorted(info.get('Containers') or {})}

    def network_create(self, name, labels):
        """A bridge network of the engine's (its subnet from the engine's address pools)."""
        try:
            return self.api.create_network(name, driver='bridge', labels=dict(labels or {}), check_duplicate=True)['Id']
        except Exception as exc:
            raise EngineError('create network %s: %s' % (name, _explain(exc)))

    def network_remove(self, name):
        """Remove a network; one already gone, or one a container is still attached to (it stays), is no error.
        Returns whether it went."""
        try:
            self.api.remove_network(name)
        except docker_errors.NotFound:
            return False
        except docker_errors.APIError as exc:
            if exc.status_code in (403, 409):
                return False
            raise EngineError('remove network %s: %s' % (name, _explain(exc)))
        except Exception as exc:
            raise EngineError('remove network %s: %s' % (name, _explain(exc)))
        return True

    # --- volumes ---------------------------------------------------------------------------------

    def volume(self, name):
        """An engine volume: {name, driver, options, labels, mountpoint}; None when there is none of that name."""
        try:
            info = self.api.inspect_volume(name)
        except docker_errors.NotFound:
            return None
        except Exception as exc:
            raise EngineError('inspect volume %s: %s' % (name, _explain(exc)))
        return {'name': info.get('Name'), 'driver': info.get('Driver'), 'options': info.get('Options') or {},
                'labels': info.get('Labels') or {}, 'mountpoint': info.get('Mountpoint')}

    def volumes_labelled(self, labels):
        """The engine volumes that carry every label of `labels` (a mapping; a name alone: any value), each
        {name, driver, labels, mountpoint}, by name: one engine call."""
        wanted = [k if v is None else '%s=%s' % (k, v) for k, v in sorted(labels.items())]
        try:
            found = self.api.volumes(filters={'label': wanted})
        except Exception as exc:
            raise EngineError('list volumes: %s' % _explain(exc))
        rows = [{'name': v['Name'], 'driver': v.get('Driver'), 'labels': v.get('Labels') or {},
                 'mountpoint': v.get('Mountpoint')} for v in (found or {}).get('Volumes') or []]
        return sorted(rows, key=lambda r: r['name'])

    def volume_create(self, name, driver, options, labels):
        try:
            self.api.create_volume(name=name, driver=driver, driver_opts=dict(options or {}) or None,
                                   labels=dict(labels or {}))
        except Exception as exc:
            raise EngineError('create volume %s: %s' % (name, _explain(exc)))

    def volume_remove(self, name, in_use_ok=False):
        """Remove one engine volume; one already gone is not an error, nor with `in_use_ok` one that a container
        mounts (it stays: None)."""
        try:
            self.api.remove_volume(name)
        except docker_errors.NotFound:
            return False
        except docker_errors.APIError as exc:
            if in_use_ok and exc.status_code == 409:
                return None
            raise EngineError('remove volume %s: %s' % (name, _explain(exc)))
        except Exception as exc:
            raise EngineError('remove volume %s: %s' % (name, _explain(exc)))
        return True
