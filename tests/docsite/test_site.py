# -*- coding: utf-8 -*-
"""The docs site as a reader meets it (`make docsite` builds it first, hack/docsite.sh): the index page opened in
a real browser (Debian's chromium, headless) shows the collection's module list; every plugin, role and playbook
has its page, and every long page of docs/ is a page of the site linked from the index."""

from __future__ import absolute_import, division, print_function

import glob
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SITE = os.path.join(os.environ.get('DOCSITE_DIR') or os.path.join(ROOT, 'build', 'docsite'), 'html')
INDEX = os.path.join(SITE, 'index.html')
PAGES = os.path.join(SITE, 'collections', 'drover', 'fleet')
SIZE = (1280, 1000)

pytestmark = pytest.mark.skipif(not os.path.isfile(INDEX), reason='the site is not built: make docsite builds it')


def names(folder, suffix):
    return sorted(os.path.basename(p)[:-len(suffix)] for p in glob.glob(os.path.join(ROOT, folder, '*' + suffix))
                  if not os.path.basename(p).startswith('_'))


MODULES = names('plugins/modules', '.py')


def browser(*args):
    """chromium, headless, on a page of the site: its output (as root it needs --no-sandbox)."""
    exe = shutil.which('chromium')
    assert exe, 'chromium is not installed (make docsite installs it)'
    home = os.path.join(os.path.dirname(SITE), 'browser-home')
    os.makedirs(home, exist_ok=True)
    out = subprocess.run([exe, '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
                          '--no-first-run', '--user-data-dir=' + home,
                          '--window-size=%d,%d' % SIZE] + list(args),
                         capture_output=True, text=True, timeout=120, check=True,
                         env=dict(os.environ, HOME=home))
    return out.stdout


def test_the_index_page_in_a_browser_shows_the_module_list():
    url = 'file://' + INDEX
    dom = browser('--dump-dom', url)
    # the page as the browser made it: every module, by its name and a link to its page
    links = dict((name, href) for href, name in re.findall(
        r'<a class="reference internal" href="([^"]+)"><span[^>]*>(\w+) module</span>', dom))
    assert sorted(links) == MODULES, dom[:2000]
    for name, href in links.items():
        assert os.path.isfile(os.path.join(SITE, href.split('#')[0])), href
    # and what a person sees of it: a screenshot of the first screen, kept beside the site
    shot = os.path.join(os.path.dirname(SITE), 'index.png')
    if os.path.exists(shot):
        os.remove(shot)
    browser('--screenshot=' + shot, url)
    from PIL import Image
    with Image.open(shot) as image:
        assert image.size == SIZE
        colours = image.convert('RGB').getcolors(maxcolors=1 << 20)
    # a rendered page of text and the theme's bars, not a blank or an error page of one colour
    assert colours and len(colours) > 50, len(colours or [])


def test_every_plugin_role_and_playbook_has_its_page():
    for name in MODULES:
        assert os.path.isfile(os.path.join(PAGES, '%s_module.html' % name)), name
    for name in names('plugins/filter', '.yml'):
        assert os.path.isfile(os.path.join(PAGES, '%s_filter.html' % name)), name
    for name in names('plugins/callback', '.py'):
        assert os.path.isfile(os.path.join(PAGES, '%s_callback.html' % name)), name
    for name in sorted(os.listdir(os.path.join(ROOT, 'roles'))):
        assert os.path.isfile(os.path.join(PAGES, '%s_role.html' % name)), name
    with open(os.path.join(SITE, 'playbooks.html')) as f:
        playbooks = f.read()
    for name in names('playbooks', '.yml'):
        assert 'drover.fleet.%s' % name in playbooks, name


def test_every_long_page_of_docs_is_a_page_linked_from_the_index():
    with open(INDEX) as f:
        index = f.read()
    for name in names('docs', '.md'):
        assert os.path.isfile(os.path.join(SITE, 'docs', '%s.html' % name)), name
        assert 'href="docs/%s.html"' % name in index, name
