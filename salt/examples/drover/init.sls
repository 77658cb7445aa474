{#- drover: this minion's tasks and runner pools, from pillar (docs/salt.md).

    drover:
      host: {store_path: /var/lib/drover/store.db}      # options every state takes (docker_host, timeout, ...)
      policy: {allow_privileged: false, bind_paths: [/srv/tasks]}  # the host's policy for tasks (ecs_task's)
      tasks: {cluster: prod, purge: true, tasks: [...]}  # drover.fleet.ecs_task's options
      pools: {purge: true, token: ..., pools: [...]}     # drover.fleet.gh_runner_slot's options

The declarations are read from pillar by the states (pillar_key), so that no secret of theirs is written
into the minion's cache of compiled states. The host's options and its policy are the states' arguments: the
states refuse them in the declarations' mappings (drover:tasks, drover:pools), which another team may write. Run by `salt-call --local state.apply drover` (a timer), or from a master's highstate. -#}
{%- set drover = salt['pillar.get']('drover', {}) %}
{%- set host = drover.get('host') or {} %}
{%- set policy = drover.get('policy') or {} %}
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
