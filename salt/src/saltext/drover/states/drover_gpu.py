"""GPUs pinned to a task's container in the host's GPU ledger (drover.fleet.gpu_pin's options and defaults).

The state ID is the task (`task`); `pinned` needs `container` and `count`.
"""

from saltext.drover import core

__virtualname__ = 'drover_gpu'


def __virtual__():
    reason = core.missing(__opts__, needs=())
    return (False, 'drover_gpu: %s' % reason) if reason else __virtualname__


def _converge(name, state, kwargs):
    argspecs = core.core('front.argspecs', __opts__)
    spec = argspecs.gpu_pin_spec()
    try:
        params = core.check(spec, core.declared(name, state, kwargs, __pillar__, 'task'))
    except core.Invalid as exc:
        return core.invalid(name, exc)
    apply_gpu = core.core('gpu.apply', __opts__)
    what = 'GPUs of %s%s' % (params['task'], '/%s' % params['container'] if params.get('container') else '')
    return core.run_state(name, lambda p, test: apply_gpu.converge(p, check_mode=test, diff=True), params, set(),
                          bool(__opts__.get('test')), __salt__, __opts__, what)


def pinned(name, **kwargs):
    return _converge(name, 'present', kwargs)


def released(name, **kwargs):
    return _converge(name, 'absent', kwargs)
