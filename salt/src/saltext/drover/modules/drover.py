"""What the drover.fleet info modules return, from Salt: the host's tasks, runner pools and GPUs; and the
placeholders of an ECS task definition kept as a template, listed and filled (the filters
drover.fleet.ecs_placeholders and drover.fleet.ecs_render of Ansible, for a state file's Jinja).

    salt-call --local drover.tasks cluster=prod
    salt-call --local drover.pools
    salt-call --local drover.gpus discovery=static devices='[GPU-1, GPU-2]'
    {{ salt['drover.ecs_render'](td, values={'IMAGE1_NAME': image}) | json }}
"""

from saltext.drover import core

__virtualname__ = 'drover'


def __virtual__():
    reason = core.missing(__opts__)
    return (False, 'drover: %s' % reason) if reason else __virtualname__


def _call(spec_name, module, kwargs):
    argspecs = core.core('front.argspecs', __opts__)
    params = core.check(getattr(argspecs, spec_name)(), core.state_args(kwargs))
    try:
        return core.core(module, __opts__).info(params)
    except Exception as exc:  # the core's failure types carry msg
        if not hasattr(exc, 'msg'):
            raise
        raise core.CommandFailed(exc.msg)


def tasks(cluster=None, name=None, **kwargs):
    """Every task the store or the engine knows (drover.fleet.ecs_task_info): {changed, tasks}."""
    return _call('ecs_task_info_spec', 'tasks.apply', dict(kwargs, cluster=cluster, name=name))


def pools(pool=None, **kwargs):
    """The host's runner pools, slots and holds (drover.fleet.gh_runner_info): {changed, pools}."""
    return _call('gh_runner_info_spec', 'pools.apply', dict(kwargs, pool=pool))


def gpus(**kwargs):
    """The host's GPUs and their pins (drover.fleet.gpu_info)."""
    return _call('gpu_info_spec', 'gpu.apply', kwargs)


def ecs_placeholders(task_definition):
    """The placeholders of an ECS task definition: [{field, text, name, style, whole}] (docs/ecs_task.md)."""
    if not isinstance(task_definition, dict):
        raise core.CommandFailed('ecs_placeholders: the task definition must be a mapping, got %s'
                                 % type(task_definition).__name__)
    return [{'field': p.field, 'text': p.text, 'name': p.name, 'style': p.style, 'whole': p.whole}
            for p in core.core('aws.template', __opts__).find(task_definition)]


def ecs_render(task_definition, values=None, images=None, environment=None, strict=True):
    """An ECS task definition with its placeholders filled from values, images and environment by container name;
    fails naming every placeholder left and every value unused (docs/ecs_task.md)."""
    template = core.core('aws.template', __opts__)
    try:
        return template.render(task_definition, values=values, images=images, environment=environment,
                               strict=bool(strict), kind_of=core.core('aws.model', __opts__).kind_at)
    except core.core('_spec_base', __opts__).SpecError as exc:
        raise core.CommandFailed('ecs_render: %s' % exc)
