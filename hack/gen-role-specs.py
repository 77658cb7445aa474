"""Write the options of an entry of drover_pools in roles/runner_pools/meta/argument_specs.yml (between its
pool-options markers) from gh_runner_slot's own table of a pool's options (front.argspecs.POOL_OPTIONS): the role takes
every option the module takes, with the same type, elements, choices and no_log. Each option keeps the description
the role gives it; an option the role had none for takes the module's (its DOCUMENTATION). `--check`: exit 1 when
the file is not what the table makes (a unit test runs it so)."""

import ast
import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.path.join(ROOT, 'roles', 'runner_pools', 'meta', 'argument_specs.yml')
MODULE = os.path.join(ROOT, 'plugins', 'modules', 'gh_runner_slot.py')
START = '# pool-options:start (hack/gen-role-specs.py writes these from front.argspecs.POOL_OPTIONS: change the table)'
END = '# pool-options:end'
INDENT = 10
WIDTH = 118
# Where the role's `required` is not the module's: an entry names its pool; a profile's name, image and slots may
# come from drover_pools_defaults (the role merges each entry over it, dicts recursively).
ROLE_REQUIRED = {('pool',): True, ('profile', 'name'): False, ('profile', 'image'): False,
                 ('profile', 'slots'): False}
KEYS = ('type', 'elements', 'choices', 'required', 'no_log')


def table():
    sys.path.insert(0, os.path.join(ROOT, 'collection', 'dev'))
    from ansible_collections.drover.fleet.plugins.module_utils.front.argspecs import POOL_OPTIONS
    return POOL_OPTIONS


def module_docs():
    """gh_runner_slot's documented options."""
    with open(MODULE) as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], 'id', None) == 'DOCUMENTATION':
            return yaml.safe_load(node.value.value)['options']
    raise SystemExit('gen-role-specs: no DOCUMENTATION in %s' % MODULE)


def role_options(text):
    """The options of an entry of drover_pools as the file has them now."""
    spec = yaml.safe_load(text)['argument_specs']['main']['options']
    return spec['drover_pools']['options']


def options(spec, had, docs, path=()):
    out = {}
    for name, arg in spec.items():
        here = path + (name,)
        mine, theirs = (had or {}).get(name) or {}, (docs or {}).get(name) or {}
        entry = dict((k, arg[k]) for k in KEYS if arg.get(k) not in (None, False))
        required = ROLE_REQUIRED.get(here, arg.get('required', False))
        entry.pop('required', None)
        if required:
            entry['required'] = True
        description = mine.get('description') or theirs.get('description')
        if not description:
            raise SystemExit('gen-role-specs: drover_pools[].%s has no description in the role nor in the module'
                             % '.'.join(here))
        entry['description'] = description if isinstance(description, list) else [description]
        if arg.get('options'):
            entry['options'] = options(arg['options'], mine.get('options'), theirs.get('suboptions'), here)
        out[name] = entry
    return out


def emit(opts, indent):
    lines = []
    pad = ' ' * indent
    for name, entry in opts.items():
        lines.append('%s%s:' % (pad, name))
        for key in KEYS:
            if key in entry:
                value = entry[key]
                if isinstance(value, list):
                    value = '[%s]' % ', '.join(value)
                elif isinstance(value, bool):
                    value = 'true' if value else 'false'
                lines.append('%s  %s: %s' % (pad, key, value))
        lines.append('%s  description:' % pad)
        for item in entry['description']:
            dumped = yaml.safe_dump([item], width=WIDTH - indent - 24, default_flow_style=False, allow_unicode=True)
            for line in dumped.rstrip('\n').split('\n'):
                lines.append('%s    %s' % (pad, line))
        if 'options' in entry:
            lines.append('%s  options:' % pad)
            lines.extend(emit(entry['options'], indent + 4))
    return lines


def render(text):
    head, rest = text.split(START + '\n', 1)
    dummy, tail = rest.split(END + '\n', 1)
    made = options(table(), role_options(text), module_docs())
    return head + START + '\n' + '\n'.join(emit(made, INDENT)) + '\n' + END + '\n' + tail


def main():
    with open(TARGET) as handle:
        text = handle.read()
    if START not in text or END not in text:
        raise SystemExit('gen-role-specs: %s lacks its markers' % TARGET)
    made = render(text)
    if '--check' in sys.argv[1:]:
        if made != text:
            print('gen-role-specs: %s is not what front.argspecs.POOL_OPTIONS makes: run hack/gen-role-specs.py'
                  % os.path.relpath(TARGET, ROOT))
            return 1
        return 0
    if made != text:
        with open(TARGET, 'w') as handle:
            handle.write(made)
    return 0


if __name__ == '__main__':
    sys.exit(main())
