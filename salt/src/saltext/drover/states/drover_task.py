"""ECS-style tasks on this minion's Docker engine, converged by the drover.fleet collection's core.

    web:
      drover_task.running:
        - cluster: prod
        - containers:
          - name: httpd
            image: registry.example.com/web:1.4

The options are exactly those of the Ansible module drover.fleet.ecs_task (with its defaults); the state ID is
the task's name, unless `tasks` is given (then the ID only names the state). The state function gives the
task's `state`: running, healthy, stopped or absent. docs/salt.md has the rest.
"""

from saltext.drover import core

__virtualname__ = 'drover_task'
# Nested in a task's entry, declared whole: hidden as the module hides it.
NESTED_SECRETS = (('tasks', 'registry_auth', 'password'),)


def __virtual__():
    reason = core.missing(__opts__)
    return (False, 'drover_task: %s' % reason) if reason else __virtualname__


def _converge(name, state, kwargs):
    argspecs = core.core('front.argspecs', __opts__)
    spec = argspecs.ecs_task_spec()
    try:
        given = core.declared(name, state, kwargs, __pillar__, 'name', plural='tasks',
                              reserved=argspecs.ECS_TASK_POLICY)
    except core.Invalid as exc:
        return core.invalid(name, exc)
    hidden = core.secrets(spec, given, NESTED_SECRETS)
    try:
        params = core.check(spec, given, argspecs.ECS_TASK_RULES)
    except core.Invalid as exc:
        return core.invalid(name, exc, hidden)
    apply_task = core.core('tasks.apply', __opts__)
    td_model = core.core('aws.model', __opts__)
    tds = [params.get('task_definition')] + [t.get('task_definition') for t in params.get('tasks') or [] if isinstance(t, dict)]
    if not td_model.HAS_BOTOCORE and any(td is not None for td in tds):
        return core.invalid(name, 'task_definition needs botocore (pip install botocore) to check it by AWS\'s model of ECS')
    what = 'tasks %s' % ', '.join(_named(t) for t in params['tasks'] if isinstance(t, dict)) \
        if params.get('tasks') is not None else 'task %s/%s' % (params['cluster'], _named(params))
    return core.run_state(name, lambda p, test: apply_task.converge(p, check_mode=test, diff=True), params, hidden,
                          bool(__opts__.get('test')), __salt__, __opts__, what)


def _named(task):
    """A task's name for the comment: its `name`, else its task definition's family."""
    td = task.get('task_definition')
    if isinstance(td, dict) and isinstance(td.get('taskDefinition'), dict):
        td = td['taskDefinition']
    return str(task.get('name') or (td.get('family') if isinstance(td, dict) else None) or '?')


def running(name, **kwargs):
    """The task (or each of `tasks`) runs as declared."""
    return _converge(name, 'running', kwargs)


def healthy(name, **kwargs):
    """The task runs as declared and is HEALTHY: waits for it, at most `healthy_wait_timeout` seconds."""
    return _converge(name, 'healthy', kwargs)


def stopped(name, **kwargs):
    """The task's containers are stopped (kept, with their exit codes)."""
    return _converge(name, 'stopped', kwargs)


def absent(name, **kwargs):
    """The task's containers are removed, and its records dropped from the host store."""
    return _converge(name, 'absent', kwargs)
