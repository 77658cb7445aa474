{#- Reactor: a runner pool held on one minion (its repository's runners keep failing there) is held on every
minion that runs it, until the same time: the fleet-wide hold that the Ansible callback drover.fleet.events keeps.

Master config (docs/salt.md):

    reactor:
      - 'drover/pool/*/pool.held':
        - salt://reactor/drover_hold.sls

The minions send their events to the master when they have one (event.send). -#}
{%- set event = data.get('data', data) %}
{%- if event.get('cause') != 'fleet' and event.get('pool') and event.get('until') %}
drover hold {{ event['pool'] }} on every minion:
  local.state.apply:
    - tgt: '*'   # a minion without pools applies drover and changes nothing
    - args:
      - mods: drover
      - pillar:
          drover_holds: {{ {event['pool']: event['until']} | json }}
{%- endif %}
