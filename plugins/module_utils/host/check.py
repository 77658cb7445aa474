# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a host has of what the modules need, in one look: the engine, the Python libraries, the store's
directory, an image.

Owns: asking the engine for its version and an image (through the engine adapter, when the Docker SDK
imports), finding which libraries the interpreter cannot import (without importing them), reading the store
directory's mode, and the interpreter the other modules run with.
Must not: change anything on the host, fail because the host lacks something (that is what it reports), or
import a library it checks for (the Docker SDK comes only through the engine adapter, which runs without it).

Two modules look with it: drover.fleet.host_info (the look alone), and drover.fleet.ecs_task given `host_check`
(the look first, in the same module run as the converge it goes on to only on a ready host).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import os
import stat
import sys

from ansible_collections.drover.fleet.plugins.module_utils import _docker


def missing_libraries(names):
    """The import names the interpreter cannot find (none is imported)."""
    out = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            out.append(name)
    return out


def directory(path, mode=None):
    """{path, exists, mode (octal string), mode_ok}: mode_ok when `mode` (an octal string) is the directory's,
    None when `mode` is not given as octal (only the file module can judge a symbolic mode)."""
    try:
        st = os.stat(path)
    except OSError:
        return {'path': path, 'exists': False, 'mode': None, 'mode_ok': False}
    if not stat.S_ISDIR(st.st_mode):
        return {'path': path, 'exists': False, 'mode': None, 'mode_ok': False}
    have = '%04o' % stat.S_IMODE(st.st_mode)
    ok = None
    if mode is None:
        ok = True
    elif str(mode).isdigit():
        try:
            ok = int(str(mode), 8) == stat.S_IMODE(st.st_mode)
        except ValueError:
            ok = None
    return {'path': path, 'exists': True, 'mode': have, 'mode_ok': ok}


def engine_and_image(docker_host, timeout, image):
    """({answers, version, api_version, error}, {name, present} or None)."""
    seen = {'answers': False, 'version': None, 'api_version': None, 'error': None}
    found = {'name': image, 'present': None} if image else None
    if not _docker.HAS_DOCKER:
        seen['answers'] = None
        seen['error'] = 'not asked: the Docker SDK (docker) does not import'
        return seen, found
    try:
        engine = _docker.Engine(docker_host, timeout=timeout)
    except _docker.EngineUnavailable as exc:
        seen['error'] = str(exc)
        return seen, found
    try:
        version = engine.version
        seen.update(answers=True, version=version.get('Version'), api_version=version.get('ApiVersion'))
        if found is not None:
            found['present'] = engine.image_present(image)
    except Exception as exc:                  # an engine that stops answering half-way answers no
        seen.update(answers=False, error=str(exc))
    finally:
        engine.close()
    return seen, found


def check(params):
    """The host_info module's one call: what the host has; `ready` when it has all of what was asked."""
    store_dir = params.get('store_dir') or os.path.dirname(os.path.abspath(params['store_path']))
    result = {
        'changed': False,
        'python': {'executable': sys.executable, 'version': '%d.%d.%d' % sys.version_info[:3]},
        'libraries_missing': missing_libraries(params.get('libraries') or []),
        'store_dir': directory(store_dir, params.get('store_dir_mode')),
    }
    result['engine'], image = engine_and_image(params.get('docker_host'), params.get('timeout') or 30,
                                               params.get('image'))
    if image is not None:
        result['image'] = image
    needs = []
    if not result['engine']['answers']:
        needs.append('engine')
    if result['libraries_missing']:
        needs.append('libraries')
    if not result['store_dir']['exists'] or not result['store_dir']['mode_ok']:
        needs.append('store_dir')
    if image is not None and not image['present']:
        needs.append('image')
    result['needs'] = needs
    result['ready'] = not needs
    return result


def look(params):
    """ecs_task's `host_check`: check() with the engine, store and timeout of the ecs_task call."""
    given = dict(params['host_check'])
    given.update(docker_host=params.get('docker_host'), store_path=params['store_path'], timeout=params.get('timeout'))
    found = check(given)
    found.pop('changed')
    return found
