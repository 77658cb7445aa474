"""Runner pools of ephemeral just-in-time GitHub Actions runners, converged by the drover.fleet collection's core.

    ci:
      drover_pool.present:
        - repository: octo/app
        - token: {{ pillar['github_token'] }}
        - profile: {name: small, image: ghcr.io/example/runner:2, slots: 2}

The options are exactly those of the Ansible module drover.fleet.gh_runner_slot (with its defaults); the state ID
is the pool's name, unless `pools` is given (then the ID only names the state).
"""

from saltext.drover import core

__virtualname__ = 'drover_pool'
NESTED_SECRETS = (('pools', 'token'), ('pools', 'app_private_key'), ('pools', 'profile', 'registry_auth', 'password'))


def __virtual__():
    reason = core.missing(__opts__, needs=('docker', 'github'))
    return (False, 'drover_pool: %s' % reason) if reason else __virtualname__


def _converge(name, state, kwargs):
    argspecs = core.core('front.argspecs', __opts__)
    spec = argspecs.gh_runner_slot_spec()
    try:
        given = core.declared(name, state, kwargs, __pillar__, 'pool', plural='pools',
                              reserved=argspecs.GH_RUNNER_POLICY)
    except core.Invalid as exc:
        return core.invalid(name, exc)
    # `holds` (this extension's own): {pool: YYYY-MM-DDTHH:MM:SSZ}, fleet-wide holds from outside this minion (a
    # reactor's, salt/examples/reactor): each is the hold_until of its pool, where the pool gives none itself.
    holds = given.pop('holds', None) or {}
    if not isinstance(holds, dict):
        return core.invalid(name, 'holds must be a mapping of pool names to times, got %s' % type(holds).__name__)
    if holds and given.get('pools') is None and given.get('pool') in holds:
        given.setdefault('hold_until', holds[given['pool']])
    if holds and isinstance(given.get('pools'), list):
        given['pools'] = [dict(e, hold_until=holds[e['pool']]) if isinstance(e, dict) and e.get('hold_until') is None
                          and e.get('pool') in holds else e for e in given['pools']]
    hidden = core.secrets(spec, given, NESTED_SECRETS)
    try:
        params = core.check(spec, given, argspecs.GH_RUNNER_SLOT_RULES)
        if params.get('pools') is not None:
            entries = []
            for index, entry in enumerate(params['pools']):
                entry = dict((k, v) for k, v in entry.items() if v is not None)
                where = 'pools[%d]%s.' % (index, ' (pool %s)' % entry['pool'] if isinstance(entry.get('pool'), str) else '')
                checked = core.check(argspecs.POOL_OPTIONS, entry, where=where)
                entries.append(dict((k, v) for k, v in checked.items() if v is not None))
            params['pools'] = entries
    except core.Invalid as exc:
        return core.invalid(name, exc, hidden)
    apply_pool = core.core('pools.apply', __opts__)
    what = 'pools %s' % ', '.join(str(p.get('pool')) for p in params['pools']) if params.get('pools') is not None \
        else 'pool %s' % params['pool']
    return core.run_state(name, lambda p, test: apply_pool.converge(p, check_mode=test), params, hidden,
                          bool(__opts__.get('test')), __salt__, __opts__, what)


def present(name, **kwargs):
    """The pool's slots run as declared (or each of `pools`)."""
    return _converge(name, 'present', kwargs)


def absent(name, **kwargs):
    """The pool is drained: its runners removed, and deregistered from GitHub."""
    return _converge(name, 'absent', kwargs)
