# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sphinx configuration of the collection's docs site (hack/docsite.sh): the pages antsibull-docs writes from the
plugins', roles' and playbooks' own documentation, and the long pages of docs/ (Markdown, through MyST)."""

project = 'drover.fleet'
copyright = 'drover.fleet contributors'     # pylint: disable=redefined-builtin
title = 'drover.fleet documentation'
html_short_title = 'drover.fleet'

extensions = ['sphinx_antsibull_ext', 'myst_parser']
source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}
root_doc = 'index'

pygments_style = 'ansible'
highlight_language = 'YAML+Jinja'

html_theme = 'sphinx_ansible_theme'
html_show_sphinx = False
display_version = False
html_use_smartypants = True
html_use_modindex = False
html_use_index = False
html_copy_source = False
# no top bar of links to Ansible's own sites: this is the collection's site
html_theme_options = {'display_version': False, 'topbar_links': {}, 'show_extranav': False}

# Nothing is fetched: the site builds offline.
intersphinx_mapping = {}
default_role = 'any'

# The docs/ pages link to files of the project beside them (tests, bench/README.md) that are not pages of the site,
# and a page of reference tables may jump heading levels: neither is an error of the site.
myst_heading_anchors = 3
suppress_warnings = ['myst.xref_missing', 'myst.header']
