"""What the drover.fleet info modules return, from Salt: the host's tasks, runner pools and GPUs.

    salt-call --local drover.tasks cluster=prod
    salt-call --local drover.pools
    salt-call --local drover.gpus discovery=static devices='[GPU-1, GPU-2]'
"""

from saltext.drover import core

__virtualname__ = 'drover'


def __virtual__():
    reason = core.missing(__opts__)
    return (False, 'drover: %s' % reason) if reason else __virtualname__


def _call(spec_name, module, kwargs):
    argspecs = core.core('_argspecs', __opts__)
    params = core.check(getattr(argspecs, spec_name)(), core.state_args(kwargs))
    try:
        return core.core(module, __opts__).info(params)
    except Exception as exc:  # the core's failure types carry msg
        if not hasattr(exc, 'msg'):
            raise
        raise core.CommandFailed(exc.msg)


def tasks(cluster=None, name=None, **kwargs):
    """Every task the store or the engine knows (drover.fleet.ecs_task_info): {changed, tasks}."""
    return _call('ecs_task_info_spec', '_apply_task', dict(kwargs, cluster=cluster, name=name))


def pools(pool=None, **kwargs):
    """The host's runner pools, slots and holds (drover.fleet.gh_runner_info): {changed, pools}."""
    return _call('gh_runner_info_spec', '_apply_pool', dict(kwargs, pool=pool))


def gpus(**kwargs):
    """The host's GPUs and their pins (drover.fleet.gpu_info)."""
    return _call('gpu_info_spec', '_apply_gpu', kwargs)
