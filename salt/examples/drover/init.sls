{#- drover: this minion's tasks and runner pools (docs/salt.md).

The declarations come from pillar, read by the states (pillar_key), so that no secret of theirs is written into
the minion's cache of compiled states:

    drover:
      tasks: {cluster: prod, purge: true, tasks: [...]}  # drover.fleet.ecs_task's options
      pools: {purge: true, token: ..., pools: [...]}     # drover.fleet.gh_runner_slot's options

The host's own options and its policy come from the minion's own configuration (a file of root's, e.g.
/etc/salt/minion.d/drover.conf), never from pillar, where any pillar file of the minion's top could add a key
(Salt merges them); the states refuse them in the declarations' mappings:

    drover.host: {store_path: /var/lib/drover/store.db, allow_host_network: false}  # every state takes them
    drover.policy: {allow_privileged: false, bind_paths: [/srv/tasks]}               # ecs_task's host policy

Run by `salt-call --local state.apply drover` (a timer), or from a master's highstate. -#}
{%- set drover = salt['pillar.get']('drover', {}) %}
{%- set host = salt['config.option']('drover.host', {}, omit_grains=True, omit_pillar=True, omit_master=True) or {} %}
{%- set policy = salt['config.option']('drover.policy', {}, omit_grains=True, omit_pillar=True, omit_master=True) or {} %}
{%- for kind, fun in (('tasks', 'drover_task.running'), ('pools', 'drover_pool.present')) %}
{%- if drover.get(kind) is mapping %}
drover-{{ kind }}:
  {{ fun }}:
{%- for key, value in host.items() %}
    - {{ key }}: {{ value | json }}
{%- endfor %}
{%- if kind == 'tasks' %}
{%- for key, value in policy.items() %}
    - {{ key }}: {{ value | json }}
{%- endfor %}
{%- endif %}
    - pillar_key: drover:{{ kind }}
{%- if kind == 'pools' and salt['pillar.get']('drover_holds') %}
    - holds: {{ salt['pillar.get']('drover_holds') | json }}
{%- endif %}
{%- endif %}
{%- endfor %}
