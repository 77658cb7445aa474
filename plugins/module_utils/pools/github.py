# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GitHub adapter: the only place that talks to GitHub (PyGithub and its requester).

Owns: auth by token or GitHub App installation, repository and organization runners (list, delete with
Deleted / Busy / NotFound, JIT registration), queued jobs of queued and in-progress runs with their
labels, a timeout on every request, conditional listings (If-None-Match with the ETag of the last answer,
kept in a cache the caller persists: a 304 does not count against the rate limit), and the translation of
rate limits (RateLimited, with the reset time) and other failures (GitHubError) into errors that name what
was being done. Never logs or returns a token or a JIT config.
Must not: decide anything.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time
import traceback

try:
    import github
    from github import GithubException
    HAS_GITHUB = True
    GITHUB_IMPORT_ERROR = None
except ImportError:  # pragma: no cover - reported through missing_required_lib
    HAS_GITHUB = False
    GITHUB_IMPORT_ERROR = traceback.format_exc()

TIMEOUT = 15
PER_PAGE = 100
DELETED, BUSY, NOT_FOUND = 'Deleted', 'Busy', 'NotFound'


class GitHubError(Exception):
    """A request failed; the listing or action it was for says nothing. `status`: the HTTP status, if any."""

    def __init__(self, msg, status=None):
        Exception.__init__(self, msg)
        self.status = status


class RateLimited(GitHubError):
    """GitHub asks for no more requests until `reset` (epoch seconds)."""

    def __init__(self, msg, reset):
        GitHubError.__init__(self, msg)
        self.reset = reset


def _reset_of(exc, clock):
    headers = dict((k.lower(), v) for k, v in (getattr(exc, 'headers', None) or {}).items())
    status = getattr(exc, 'status', None)
    if status == 429 or (status == 403 and (headers.get('x-ratelimit-remaining') == '0' or 'retry-after' in headers)):
        if 'retry-after' in headers:
            try:
                return clock() + float(headers['retry-after'])
            except ValueError:
                pass
        try:
            return float(headers.get('x-ratelimit-reset'))
        except (TypeError, ValueError):
            return clock() + 60
    return None


def _message(exc):
    data = getattr(exc, 'data', None)
    if isinstance(data, dict) and data.get('message'):
        return '%s %s' % (getattr(exc, 'status', ''), data['message'])
    return '%s %s' % (getattr(exc, 'status', '') or '', str(exc)[:200] or exc.__class__.__name__)


class Etags:
    """ETags and answers of listings: `known` as loaded (from the last pass), `used` the ones this pass asked
    for or got, which are all the caller keeps (a listing no longer asked for is dropped)."""

    def __init__(self, known=None):
        self.known = dict(known or {})
        self.used = {}

    def get(self, key):
        entry = self.used.get(key) or self.known.get(key)
        if isinstance(entry, dict) and isinstance(entry.get('etag'), str) and 'data' in entry:
            return entry
        return None

    def put(self, key, entry):
        self.used[key] = entry


class GitHub:
    """One pool's view of GitHub: a repository's or an organization's runners and jobs."""

    def __init__(self, api_url, auth, repository=None, organization=None, timeout=TIMEOUT, clock=time.time,
                 etags=None):
        self.clock = clock
        self.repository = repository
        self.organization = organization
        self.requests = 0
        self.not_modified = 0       # conditional listings GitHub answered 304 (free against the rate limit)
        self.api_url = api_url
        # The last answer of each listing, to ask again with If-None-Match: shared by every pool of a call and
        # persisted by the caller (Etags).
        self.etags = Etags() if etags is None else etags
        if auth.token:
            credentials = github.Auth.Token(auth.token)
        else:
            credentials = github.Auth.AppAuth(int(auth.app_id), auth.app_private_key).get_installation_auth(
                int(auth.installation_id))
        self.gh = github.Github(base_url=api_url, auth=credentials, timeout=timeout, per_page=PER_PAGE, retry=None,
                                seconds_between_requests=None, seconds_between_writes=None)
        self.requester = self.gh.requester

    @property
    def base(self):
        return '/repos/%s' % self.repository if self.repository else '/orgs/%s' % self.organization

    def _call(self, verb, url, what, parameters=None, body=None, headers=None):
        self.requests += 1
        try:
            return self.requester.requestJsonAndCheck(verb, url, parameters=parameters, input=body, headers=headers)
        except GithubException as exc:
            reset = _reset_of(exc, self.clock)
            if reset is not None:
                raise RateLimited('%s: rate limited until %s' % (what, time.strftime(
                    '%Y-%m-%dT%H:%M:%SZ', time.gmtime(reset))), reset)
            raise GitHubError('%s: %s' % (what, _message(exc)), getattr(exc, 'status', None))
        except Exception as exc:  # pylint: disable=broad-except
            # Timeouts, refused connections, a body that is not JSON: the request says nothing.
            raise GitHubError('%s: %s' % (what, str(exc)[:300] or exc.__class__.__name__))

    def _get(self, url, what, params):
        """A listing's answer, asked conditionally when an earlier one is cached (304: the cached one)."""
        key = '%s %s?%s' % (self.api_url, url, '&'.join('%s=%s' % kv for kv in sorted(params.items())))
        cached = self.etags.get(key)
        headers = {'If-None-Match': cached['etag']} if cached else None
        answer_headers, data = self._call('GET', url, what, params, headers=headers)
        if cached and data is None:             # 304 Not Modified: no body
            self.not_modified += 1
            self.etags.put(key, cached)
            return cached['data']
        etag = dict((k.lower(), v) for k, v in (answer_headers or {}).items()).get('etag')
        if etag and data is not None:
            self.etags.put(key, {'etag': etag, 'data': data})
        return data

    def _pages(self, url, key, what, parameters=None):
        out = []
        page = 1
        while True:
            params = dict(parameters or {}, per_page=PER_PAGE, page=page)
            data = self._get(url, what, params)
            if not isinstance(data, dict) or not isinstance(data.get(key), list):
                raise GitHubError('%s: answer without %s' % (what, key))
            out.extend(data[key])
            if len(data[key]) < PER_PAGE:
                return out
            page += 1

    # --- runners ---------------------------------------------------------------------------------

    def runners(self):
        """The pool's registered runners: [{id, name, status, busy, labels}]."""
        rows = self._pages(self.base + '/actions/runners', 'runners', 'list runners of %s' % self.base[1:])
        return [{'id': r.get('id'), 'name': r.get('name'), 'status': r.get('status'), 'busy': bool(r.get('busy')),
                 'labels': [l.get('name') for l in r.get('labels') or []]} for r in rows]

    def delete_runner(self, runner_id):
        """Deleted, Busy (GitHub keeps a runner that runs a job) or NotFound."""
        try:
            self._call('DELETE', '%s/actions/runners/%d' % (self.base, runner_id), 'delete runner %d' % runner_id)
        except RateLimited:
            raise
        except GitHubError as exc:
            if exc.status == 404:
                return NOT_FOUND
            if exc.status == 422:
                return BUSY
            raise
        return DELETED

    def register(self, name, runner_group_id, labels, work_folder):
        """A just-in-time runner: (runner id, encoded JIT config). The config is a secret."""
        body = {'name': name, 'runner_group_id': runner_group_id, 'labels': list(labels), 'work_folder': work_folder}
        data = self._call('POST', self.base + '/actions/runners/generate-jitconfig', 'register runner %s' % name,
                          body=body)[1]
        try:
            return int(data['runner']['id']), data['encoded_jit_config']
        except (KeyError, TypeError, ValueError):
            raise GitHubError('register runner %s: answer without runner id or JIT config' % name)

    # --- jobs ------------------------------------------------------------------------------------

    def _repositories(self):
        return [self.repository] if self.repository else self._org_repos()

    def _org_repos(self):
        out = []
        page = 1
        while True:
            data = self._get('/orgs/%s/repos' % self.organization, 'list repositories of %s' % self.organization,
                             {'per_page': PER_PAGE, 'page': page})
            if not isinstance(data, list):
                raise GitHubError('list repositories of %s: answer is not a list' % self.organization)
            out.extend(r['full_name'] for r in data if isinstance(r, dict) and r.get('full_name'))
            if len(data) < PER_PAGE:
                return out
            page += 1

    def queued_jobs(self):
        """Every queued job of the pool's queued and in-progress runs: [{id, name, labels, repository, created_at}]."""
        jobs = []
        for repo in self._repositories():
            for status in ('queued', 'in_progress'):
                runs = self._pages('/repos/%s/actions/runs' % repo, 'workflow_runs',
                                   'list %s runs of %s' % (status, repo), {'status': status})
                for run in runs:
                    for job in self._pages('/repos/%s/actions/runs/%d/jobs' % (repo, run['id']), 'jobs',
                                           'list jobs of run %d' % run['id']):
                        if job.get('status') == 'queued':
                            jobs.append({'id': job.get('id'), 'name': job.get('name'), 'repository': repo,
                                         'labels': list(job.get('labels') or []),
                                         'created_at': job.get('created_at')})
        return jobs
