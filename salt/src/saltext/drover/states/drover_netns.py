"""A task's awsvpc network namespace around a hot-plugged ENI (drover.fleet.task_netns's options and defaults).

The state ID is the task's name (`name`).
"""

from saltext.drover import core

__virtualname__ = 'drover_netns'


def __virtual__():
    reason = core.missing(__opts__)
    if reason is None and not core.core('network.netlink', __opts__).HAS_PYROUTE2:
        reason = 'missing pyroute2 (pip install pyroute2)'
    return (False, 'drover_netns: %s' % reason) if reason else __virtualname__


def _converge(name, state, kwargs):
    argspecs = core.core('front.argspecs', __opts__)
    spec = argspecs.task_netns_spec()
    try:
        params = core.check(spec, core.declared(name, state, kwargs, __pillar__, 'name'), argspecs.TASK_NETNS_RULES)
    except core.Invalid as exc:
        return core.invalid(name, exc)
    apply_netns = core.core('network.apply', __opts__)
    return core.run_state(name, lambda p, test: apply_netns.converge(p, check_mode=test, diff=True), params, set(),
                          bool(__opts__.get('test')), __salt__, __opts__,
                          'task network %s/%s' % (params['cluster'], params['name']))


def present(name, **kwargs):
    return _converge(name, 'present', kwargs)


def absent(name, **kwargs):
    return _converge(name, 'absent', kwargs)
