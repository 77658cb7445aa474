# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pages of the docs site that hack/docsite.sh writes besides antsibull-docs' own: the site's index (what the
collection is, its modules each with its one line, the reference and the guides) and the page of the playbooks
(each entry point `drover.fleet.<name>` with the comment that opens its file: what it does, how it is run).

    python hack/docsite/pages.py index ROOT > index.rst
    python hack/docsite/pages.py playbooks ROOT > playbooks.rst
"""

import ast
import os
import sys

import yaml


def opening_comment(path):
    """The lines of the comment block at the top of a playbook (after `---`), without their `# `."""
    lines = []
    with open(path) as handle:
        for line in handle:
            if line.strip() == '---' and not lines:
                continue
            if not line.startswith('#'):
                break
            lines.append(line[2:].rstrip() if line.startswith('# ') else line[1:].rstrip())
    return lines


def short_description(path):
    """A module's one line, from its DOCUMENTATION."""
    with open(path) as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], 'id', None) == 'DOCUMENTATION':
            return yaml.safe_load(node.value.value)['short_description']
    raise SystemExit('docsite: no DOCUMENTATION in %s' % path)


def index(root):
    out = ['drover.fleet', '============', '',
           'Run container workloads and self-hosted CI runners on your own hosts, declared in an inventory and',
           'converged by ``ansible-playbook``, AWX or a timer.', '', 'Modules', '-------', '']
    folder = os.path.join(root, 'plugins', 'modules')
    for name in sorted(os.listdir(folder)):
        if name.endswith('.py') and not name.startswith('_'):
            module = name[:-len('.py')]
            out.append('* :ansplugin:`%s module <drover.fleet.%s#module>` -- %s' % (
                module, module, short_description(os.path.join(folder, name))))
    out += ['', '.. toctree::', '   :maxdepth: 2', '   :caption: Reference', '',
            '   collections/drover/fleet/index', '   playbooks', '',
            '.. toctree::', '   :maxdepth: 1', '   :caption: Guides', '']
    out += ['   docs/%s' % name[:-len('.md')] for name in sorted(os.listdir(os.path.join(root, 'docs')))
            if name.endswith('.md')]
    out += ['', '.. toctree::', '   :maxdepth: 1', '   :caption: Ansible', '', '   ansible', '']
    return '\n'.join(out)


def playbooks(root):
    folder = os.path.join(root, 'playbooks')
    out = ['.. _drover_fleet_playbooks:', '', 'Playbooks', '=========', '',
           'The collection\'s playbooks, run by their names (``ansible-playbook -i inventory drover.fleet.<name>``).',
           'The roles they run are in the collection\'s role index; the guides say how they fit together.', '']
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if not name.endswith('.yml') or not os.path.isfile(path):
            continue
        title = 'drover.fleet.%s' % name[:-len('.yml')]
        out += [title, '-' * len(title), '', '.. code-block:: text', '']
        out += ['   ' + line if line else '' for line in opening_comment(path) or ['(no description)']]
        out.append('')
    return '\n'.join(out) + '\n'


if __name__ == '__main__':
    sys.stdout.write({'index': index, 'playbooks': playbooks}[sys.argv[1]](sys.argv[2]))
