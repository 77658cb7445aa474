# -*- coding: utf-8 -*-
"""The GitHub stand-in (tests/fixtures/github_standin): PyGithub against it, its control API, its faults, and
its checks against GitHub's OpenAPI description."""

from __future__ import absolute_import, division, print_function

import base64
import collections
import http.client
import json
import os
import subprocess
import sys
import time

import pytest

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'fixtures')
if FIXTURES not in sys.path:
    sys.path.insert(0, FIXTURES)

import github  # noqa: E402
from github_standin.server import StandIn  # noqa: E402

TOKEN = 'test-token'


@pytest.fixture
def standin():
    with StandIn(token=TOKEN) as server:
        yield server
        assert server.violations == [], '\n'.join(server.violations)


def _gh(server, auth=None, **kw):
    # retry=None: PyGithub's default GithubRetry would retry 5xx and sleep through rate limits;
    # seconds_between_*: PyGithub otherwise waits 0.25 s between requests and 1 s between writes
    kw.setdefault('timeout', 10)
    return github.Github(base_url=server.url, auth=auth or github.Auth.Token(TOKEN), retry=None,
                         seconds_between_requests=0, seconds_between_writes=0, **kw)


@pytest.fixture
def gh(standin):
    return _gh(standin)


class Resp(collections.namedtuple('Resp', 'status headers body')):
    """A raw HTTP answer."""

    def json(self):
        return json.loads(self.body)


def call(server, method, path, body=None, headers=None, token=TOKEN, raw=None):
    """One raw HTTP request: Resp(status, headers, body bytes)."""
    conn = http.client.HTTPConnection('127.0.0.1', server.port, timeout=10)
    hdrs = {'Accept': 'application/vnd.github+json'}
    if token:
        hdrs['Authorization'] = 'token %s' % token
    if body is not None or raw is not None:
        hdrs['Content-Type'] = 'application/json'
    hdrs.update(headers or {})
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    conn.request(method, path, body=data, headers=hdrs)
    resp = conn.getresponse()
    out = Resp(resp.status, dict(resp.getheaders()), resp.read())
    conn.close()
    return out


def control(server, method, path, body=None):
    resp = call(server, method, '/_standin' + path, body=body, token=None)
    return resp.status, (json.loads(resp.body) if resp.body else None)


def jit(gh, repo, name, labels=('self-hosted', 'linux'), group=1):
    return gh.requester.requestJsonAndCheck(
        'POST', '/repos/%s/actions/runners/generate-jitconfig' % repo,
        input={'name': name, 'runner_group_id': group, 'labels': list(labels), 'work_folder': '_work'})[1]


def decode(encoded):
    return json.loads(base64.b64decode(encoded))


# --- runners -----------------------------------------------------------------------------------------------

def test_repo_runners_list_get_and_jitconfig(standin, gh):
    repo = gh.get_repo('octo/app')
    assert repo.get_self_hosted_runners().totalCount == 0
    data = jit(gh, 'octo/app', 'drover-m1-small-0-1700000000', labels=['self-hosted', 'Linux', 'gpu'])
    runner = data['runner']
    assert runner['name'] == 'drover-m1-small-0-1700000000'
    assert runner['status'] == 'offline' and runner['busy'] is False and runner['runner_group_id'] == 1
    assert [(label['name'], label['type']) for label in runner['labels']] == [
        ('self-hosted', 'read-only'), ('Linux', 'read-only'), ('gpu', 'custom')]
    config = decode(data['encoded_jit_config'])
    assert config['url'] == standin.url and config['runner_id'] == runner['id']
    assert config['runner_name'] == runner['name'] and len(config['secret']) >= 32
    listed = list(repo.get_self_hosted_runners())
    assert [r.id for r in listed] == [runner['id']] and listed[0].os == 'linux'
    assert repo.get_self_hosted_runner(runner['id']).name == runner['name']
    # a second config gets another secret
    other = decode(jit(gh, 'octo/app', 'second')['encoded_jit_config'])
    assert other['secret'] != config['secret']


def test_jitconfig_name_conflict_is_409(standin, gh):
    jit(gh, 'octo/app', 'dup')
    with pytest.raises(github.GithubException) as err:
        jit(gh, 'octo/app', 'dup')
    assert err.value.status == 409
    assert 'already exists' in err.value.data['message']
    # the same name in another repository is fine
    jit(gh, 'octo/other', 'dup')


@pytest.mark.parametrize('body', [
    {'name': 'x', 'runner_group_id': 1, 'labels': []},
    {'name': 'x', 'labels': ['self-hosted']},
])
def test_jitconfig_needs_labels_and_group(standin, body):
    resp = call(standin, 'POST', '/repos/octo/app/actions/runners/generate-jitconfig', body=body)
    assert resp.status == 422
    assert resp.json()['documentation_url']
    # the request broke the schema: recorded (and cleared here, so the fixture stays green)
    problems = standin.take_violations()
    assert problems and all(p.startswith('request POST') for p in problems)
    assert standin.state()['runners'] == []


def test_jitconfig_unknown_runner_group_is_404(standin, gh):
    with pytest.raises(github.GithubException) as err:
        jit(gh, 'octo/app', 'r', group=7)
    assert err.value.status == 404


def test_validation_records_a_broken_request_body(standin):
    resp = call(standin, 'POST', '/repos/octo/app/actions/runners/generate-jitconfig',
                body={'name': 'x', 'runner_group_id': 1, 'labels': 'self-hosted'})
    assert resp.status == 422
    assert 'Invalid request' in resp.json()['message']
    assert len(standin.violations) == 1
    assert "labels: 'self-hosted' is not of type 'array'" in standin.violations[0]
    assert standin.take_violations() and standin.violations == []


def test_validation_records_unknown_paths_params_and_bodies(standin):
    assert call(standin, 'GET', '/repos/octo/app/actions/runnerz').status == 404
    assert call(standin, 'GET', '/repos/octo/app/actions/runners?per_page=ten&colour=red').status == 200
    assert call(standin, 'GET', '/repos/octo/app/actions/runners/abc').status == 404
    assert call(standin, 'POST', '/repos/octo/app/actions/runners/generate-jitconfig', raw=b'{not json').status == 400
    problems = standin.take_violations()
    joined = '\n'.join(problems)
    assert 'no such path' in joined
    assert 'per_page' in joined and "colour is not defined" in joined
    assert "runner_id='abc'" in joined
    assert 'not JSON' in joined


def test_validation_flags_a_response_that_breaks_the_schema(standin, gh):
    standin.add_runner('octo/app', 'bad', ['self-hosted'])
    with standin._lock:
        next(iter(standin.runners.values()))['busy'] = 'no'  # a stand-in bug, on purpose
    call(standin, 'GET', '/repos/octo/app/actions/runners')
    problems = standin.take_violations()
    assert len(problems) == 1 and problems[0].startswith('response 200 to GET /repos/octo/app/actions/runners')
    assert "busy: 'no' is not of type 'boolean'" in problems[0]


def test_org_runners_through_pygithub(standin, gh):
    standin.add_org('acme', repos=['app', 'web'])
    org = gh.get_organization('acme')
    config = org.create_self_hosted_runner_jitconfig('acme-r1', 1, ['self-hosted', 'linux', 'big'],
                                                     work_folder='_work')
    assert config.runner.name == 'acme-r1'
    assert decode(config.encoded_jit_config)['runner_name'] == 'acme-r1'
    runners = list(org.get_self_hosted_runners())
    assert [r.name for r in runners] == ['acme-r1']
    assert org.get_self_hosted_runner(runners[0].id).runner_group_id == 1
    # org runners are not repository runners
    assert gh.get_repo('acme/app').get_self_hosted_runners().totalCount == 0
    assert sorted(r.full_name for r in org.get_repos()) == ['acme/app', 'acme/web']
    groups = gh.requester.requestJsonAndCheck('GET', '/orgs/acme/actions/runner-groups')[1]
    assert groups['total_count'] == 1
    assert groups['runner_groups'][0]['id'] == 1 and groups['runner_groups'][0]['name'] == 'Default'
    assert groups['runner_groups'][0]['default'] is True
    big = standin.add_runner_group('acme', 'big-boxes')
    org.create_self_hosted_runner_jitconfig('acme-r2', big['id'], ['self-hosted'])
    assert standin.runner_by_name('acme-r2')['runner_group_id'] == big['id']
    org.delete_self_hosted_runner(runners[0].id)
    assert [r.name for r in org.get_self_hosted_runners()] == ['acme-r2']


def test_delete_idle_unknown_and_busy(standin, gh):
    repo = gh.get_repo('octo/app')
    idle = jit(gh, 'octo/app', 'idle')['runner']
    assert repo.remove_self_hosted_runner(idle['id']) is True
    with pytest.raises(github.UnknownObjectException):
        repo.get_self_hosted_runner(idle['id'])
    assert call(standin, 'DELETE', '/repos/octo/app/actions/runners/%d' % idle['id']).status == 404

    busy = standin.add_runner('octo/app', 'busy-one', ['self-hosted'], busy=True)
    with pytest.raises(github.GithubException) as err:
        gh.requester.requestJsonAndCheck('DELETE', '/repos/octo/app/actions/runners/%d' % busy['id'])
    assert err.value.status == 422
    assert err.value.data['message'] == 'Bad request - Runner "busy-one" is still running a job"'
    # PyGithub's Repository.remove_self_hosted_runner does not raise: it answers False
    assert repo.remove_self_hosted_runner(busy['id']) is False
    assert standin.runner_by_name('busy-one') is not None

    standin.add_org('acme')
    org_busy = standin.add_runner('acme', 'org-busy', ['self-hosted'], busy=True)
    with pytest.raises(github.GithubException) as err:
        gh.get_organization('acme').delete_self_hosted_runner(org_busy['id'])
    assert err.value.status == 422


def test_runner_pagination_follows_link_headers(standin, gh):
    for i in range(5):
        standin.add_runner('octo/app', 'r%d' % i, ['self-hosted'])
    resp = call(standin, 'GET', '/repos/octo/app/actions/runners?per_page=2&page=2')
    body = resp.json()
    assert resp.status == 200 and body['total_count'] == 5 and [r['name'] for r in body['runners']] == ['r2', 'r3']
    link = resp.headers['Link']
    assert 'rel="next"' in link and 'page=3' in link and 'rel="prev"' in link
    gh2 = _gh(standin, per_page=2)
    names = [r.name for r in gh2.get_repo('octo/app').get_self_hosted_runners()]
    assert names == ['r0', 'r1', 'r2', 'r3', 'r4']
    assert len(standin.calls('GET', '/repos/octo/app/actions/runners')) == 1 + 3
    # name filter
    resp = call(standin, 'GET', '/repos/octo/app/actions/runners?name=r3')
    assert [r['name'] for r in resp.json()['runners']] == ['r3']


# --- jobs and the runner side --------------------------------------------------------------------------------

def test_job_lifecycle_through_the_control_api(standin, gh):
    status, queued = control(standin, 'POST', '/jobs', {'repo': 'octo/app', 'labels': ['self-hosted', 'linux'],
                                                        'name': 'unit'})
    assert status == 201 and set(queued) == {'run_id', 'job_id'}
    repo = gh.get_repo('octo/app')
    runs = list(repo.get_workflow_runs(status='queued'))
    assert [r.id for r in runs] == [queued['run_id']]
    jobs = list(runs[0].jobs())
    assert [(j.id, j.status, j.labels, j.runner_name) for j in jobs] == [
        (queued['job_id'], 'queued', ['self-hosted', 'linux'], None)]

    config = decode(jit(gh, 'octo/app', 'worker', labels=['self-hosted', 'Linux', 'x64'])['encoded_jit_config'])
    secret = config['secret']
    status, got = control(standin, 'POST', '/runner/acquire', {'secret': secret})
    assert status == 200 and got['job_id'] == queued['job_id'] and got['name'] == 'unit'
    runner = standin.runner_by_name('worker')
    assert runner['status'] == 'online' and runner['busy'] is True
    assert repo.get_workflow_runs(status='queued').totalCount == 0
    running = list(repo.get_workflow_runs(status='in_progress'))
    assert [r.id for r in running] == [queued['run_id']]
    job = list(running[0].jobs())[0]
    assert (job.status, job.runner_name, job.runner_id) == ('in_progress', 'worker', runner['id'])
    # a JIT config takes one job only
    assert control(standin, 'POST', '/runner/acquire', {'secret': secret})[0] == 409

    status, done = control(standin, 'POST', '/runner/complete',
                           {'secret': secret, 'job_id': queued['job_id'], 'conclusion': 'success'})
    assert status == 200 and done['conclusion'] == 'success'
    assert repo.get_self_hosted_runners().totalCount == 0  # ephemeral: gone after its job
    run = repo.get_workflow_run(queued['run_id'])
    assert (run.status, run.conclusion) == ('completed', 'success')
    assert control(standin, 'POST', '/runner/acquire', {'secret': secret})[0] == 410
    assert control(standin, 'POST', '/runner/complete',
                   {'secret': secret, 'job_id': queued['job_id']})[0] == 410
    state = control(standin, 'GET', '/state')[1]
    assert state['jobs'][0]['status'] == 'completed' and state['runners'] == []


def test_acquire_without_a_matching_job_polls_then_takes_one(standin, gh):
    standin.queue_job('octo/app', ['self-hosted', 'gpu'])
    secret = decode(jit(gh, 'octo/app', 'cpu-only', labels=['linux'])['encoded_jit_config'])['secret']
    assert standin.acquire(secret) == (204, None)
    assert standin.runner_by_name('cpu-only')['status'] == 'online'
    job = standin.queue_job('octo/app', ['SELF-HOSTED', 'LINUX'], name='lint')
    status, got = standin.acquire(secret)  # polling again with the same config is fine until it takes a job
    assert status == 200 and got['job_id'] == job['id']


def test_acquire_unknown_and_exited_runners(standin, gh):
    assert standin.acquire('nope')[0] == 404
    data = jit(gh, 'octo/app', 'quitter')
    secret = decode(data['encoded_jit_config'])['secret']
    assert standin.acquire(secret)[0] == 204
    assert control(standin, 'POST', '/runner/exit', {'secret': secret})[0] == 204
    assert standin.runner_by_name('quitter')['status'] == 'offline'  # still registered: an orphan to clean
    assert standin.acquire(secret)[0] == 410
    # a registration deleted before its runner starts
    secret2 = decode(jit(gh, 'octo/app', 'deleted')['encoded_jit_config'])['secret']
    gh.get_repo('octo/app').remove_self_hosted_runner(standin.runner_by_name('deleted')['id'])
    assert standin.acquire(secret2)[0] == 404


def test_job_matching_rules():
    match = StandIn.labels_match
    assert match(['self-hosted', 'linux'], ['Linux'])
    assert match(['self-hosted'], [])
    assert match(['GPU'], ['gpu', 'linux'])
    assert not match(['self-hosted', 'gpu'], ['linux'])
    assert match([], ['linux'])


def test_org_runner_takes_org_repo_jobs_only(standin, gh):
    standin.add_org('acme', repos=['app'])
    standin.queue_job('someone/else', ['self-hosted'])
    job = standin.queue_job('acme/app', ['self-hosted'])
    config = gh.get_organization('acme').create_self_hosted_runner_jitconfig('acme-r', 1, ['self-hosted'])
    status, got = standin.acquire(decode(config.encoded_jit_config)['secret'])
    assert status == 200 and got['job_id'] == job['id'] and got['repo'] == 'acme/app'
    jobs = standin.state()['jobs']
    assert [j['status'] for j in jobs] == ['queued', 'in_progress']
    assert jobs[1]['runner_group_name'] == 'Default'


def test_runner_group_with_selected_repositories(standin, gh):
    standin.add_org('acme', repos=['app', 'web'])
    group = standin.add_runner_group('acme', 'web-only', visibility='selected', repos=['acme/web'])
    standin.queue_job('acme/app', ['self-hosted'])
    config = gh.get_organization('acme').create_self_hosted_runner_jitconfig('w', group['id'], ['self-hosted'])
    secret = decode(config.encoded_jit_config)['secret']
    assert standin.acquire(secret)[0] == 204
    job = standin.queue_job('acme/web', ['self-hosted'])
    assert standin.acquire(secret)[1]['job_id'] == job['id']
    groups = gh.requester.requestJsonAndCheck('GET', '/orgs/acme/actions/runner-groups',
                                              parameters={'visible_to_repository': 'app'})[1]
    assert [g['name'] for g in groups['runner_groups']] == ['Default']


def test_runs_listing_by_status_and_conclusion(standin, gh):
    ids = [standin.queue_job('octo/app', ['self-hosted'], name='j%d' % i)['run_id'] for i in range(3)]
    secret = decode(jit(gh, 'octo/app', 'w')['encoded_jit_config'])['secret']
    got = standin.acquire(secret)[1]
    standin.complete(secret, got['job_id'], 'failure')
    repo = gh.get_repo('octo/app')
    assert [r.id for r in repo.get_workflow_runs(status='queued')] == list(reversed(ids[1:]))  # newest first
    assert [r.id for r in repo.get_workflow_runs(status='failure')] == [ids[0]]
    assert [r.id for r in repo.get_workflow_runs(status='completed')] == [ids[0]]
    assert repo.get_workflow_runs().totalCount == 3


# --- conditional requests --------------------------------------------------------------------------------------

@pytest.mark.parametrize('path', ['/repos/octo/app/actions/runners', '/repos/octo/app/actions/runs?status=queued'])
def test_etag_and_if_none_match(standin, path):
    first = call(standin, 'GET', path)
    etag = first.headers['ETag']
    assert first.status == 200 and etag.startswith('W/"')
    before = int(first.headers['X-RateLimit-Remaining'])
    again = call(standin, 'GET', path, headers={'If-None-Match': etag})
    assert again.status == 304 and again.body == b''
    assert int(again.headers['X-RateLimit-Remaining']) == before  # 304s are free
    standin.add_runner('octo/app', 'new', ['self-hosted'])
    standin.queue_job('octo/app', ['self-hosted'])
    changed = call(standin, 'GET', path, headers={'If-None-Match': etag})
    assert changed.status == 200 and changed.headers['ETag'] != etag


# --- auth ------------------------------------------------------------------------------------------------------

def test_requests_without_or_with_a_wrong_token_get_401(standin):
    resp = call(standin, 'GET', '/repos/octo/app/actions/runners', token=None)
    assert resp.status == 401 and set(resp.json()) >= {'message', 'documentation_url'}
    resp = call(standin, 'GET', '/repos/octo/app/actions/runners', token='wrong')
    assert resp.status == 401 and resp.json()['message'] == 'Bad credentials'
    resp = call(standin, 'GET', '/rate_limit', headers={'Authorization': 'Bearer %s' % TOKEN}, token=None)
    assert resp.status == 200
    with pytest.raises(github.BadCredentialsException):
        _gh(standin, github.Auth.Token('wrong')).get_repo('octo/app').get_self_hosted_runners().totalCount


def _rsa_key():
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


@pytest.fixture(scope='module')
def app_keys():
    return _rsa_key(), _rsa_key()


def test_github_app_installation_auth(app_keys):
    (private, public), (other_private, _other_public) = app_keys
    with StandIn(token=TOKEN, app={'app_id': 123, 'installation_id': 456, 'public_key_pem': public}) as server:
        auth = github.Auth.AppAuth(123, private).get_installation_auth(456)
        gh = _gh(server, auth)
        assert gh.get_repo('octo/app').get_self_hosted_runners().totalCount == 0
        tokens = server.calls('POST', '/app/installations/456/access_tokens')
        assert len(tokens) == 1 and tokens[0]['status'] == 201
        assert auth.token.startswith('ghs_')
        # the installation token is accepted like the PAT, on raw requests too
        assert call(server, 'GET', '/rate_limit', token=auth.token).status == 200

        integration = github.GithubIntegration(base_url=server.url, auth=github.Auth.AppAuth(123, private),
                                               retry=None, seconds_between_requests=0, seconds_between_writes=0)
        assert integration.get_repo_installation('octo', 'app').id == 456
        server.add_org('acme')
        assert integration.get_org_installation('acme').id == 456
        assert integration.get_access_token(456).token != auth.token
        with pytest.raises(github.GithubException) as err:
            integration.get_access_token(999)
        assert err.value.status == 404

        # a JWT signed with another key, a JWT for another app, a PAT on an app endpoint
        with pytest.raises(github.GithubException) as err:
            github.GithubIntegration(base_url=server.url, auth=github.Auth.AppAuth(123, other_private),
                                     retry=None).get_access_token(456)
        assert err.value.status == 401
        with pytest.raises(github.GithubException) as err:
            github.GithubIntegration(base_url=server.url, auth=github.Auth.AppAuth(124, private),
                                     retry=None).get_access_token(456)
        assert err.value.status == 401
        assert call(server, 'POST', '/app/installations/456/access_tokens', body={}).status == 401

        # expired installation tokens are refused
        server.expire_installation_tokens()
        assert call(server, 'GET', '/rate_limit', token=auth.token).status == 401
        assert server.violations == [], '\n'.join(server.violations)


def test_app_jwt_too_long_lived_is_refused(app_keys):
    import jwt
    private, public = app_keys[0]
    with StandIn(app={'app_id': 123, 'installation_id': 456, 'public_key_pem': public}) as server:
        now = int(time.time())
        token = jwt.encode({'iat': now - 60, 'exp': now + 3600, 'iss': '123'}, private, algorithm='RS256')
        resp = call(server, 'POST', '/app/installations/456/access_tokens', body={}, token=None,
                    headers={'Authorization': 'Bearer %s' % token})
        assert resp.status == 401
        token = jwt.encode({'iat': now - 60, 'exp': now + 500, 'iss': '123'}, private, algorithm='RS256')
        resp = call(server, 'POST', '/app/installations/456/access_tokens', body={}, token=None,
                    headers={'Authorization': 'Bearer %s' % token})
        assert resp.status == 201 and set(resp.json()) >= {'token', 'expires_at'}
        assert server.violations == [], '\n'.join(server.violations)


# --- faults ------------------------------------------------------------------------------------------------------

def test_fault_server_error(standin, gh):
    standin.fail('server_error', count=2)
    repo = _gh(standin, lazy=True).get_repo('octo/app')
    for expected in (502, 502):
        with pytest.raises(github.GithubException) as err:
            repo.get_self_hosted_runners().totalCount
        assert err.value.status == expected
    assert repo.get_self_hosted_runners().totalCount == 0
    standin.fail('server_error', status=500, path='/actions/runs')
    assert repo.get_self_hosted_runners().totalCount == 0  # path filter: not this one
    with pytest.raises(github.GithubException) as err:
        repo.get_workflow_runs().totalCount
    assert err.value.status == 500
    assert [r['fault'] for r in standin.calls() if r['fault']] == ['server_error'] * 3


def test_fault_rate_limit_403_and_429(standin, gh):
    standin.fail('rate_limit', reset_in=120)
    repo = _gh(standin, lazy=True).get_repo('octo/app')
    with pytest.raises(github.RateLimitExceededException) as err:
        repo.get_self_hosted_runners().totalCount
    assert err.value.status == 403
    headers = {k.lower(): v for k, v in err.value.headers.items()}
    assert headers['x-ratelimit-remaining'] == '0'
    assert 110 <= int(headers['x-ratelimit-reset']) - time.time() <= 121
    assert err.value.data['message'].startswith('API rate limit exceeded')
    assert control(standin, 'POST', '/faults', {'kind': 'rate_limit', 'status': 429, 'reset_in': 30})[0] == 201
    resp = call(standin, 'GET', '/repos/octo/app/actions/runners')
    assert resp.status == 429 and resp.headers['Retry-After'] == '30'
    assert resp.headers['X-RateLimit-Remaining'] == '0'
    assert call(standin, 'GET', '/repos/octo/app/actions/runners').status == 200


def test_fault_busy_delete(standin, gh):
    idle = standin.add_runner('octo/app', 'idle', ['self-hosted'])
    standin.fail('busy_delete')
    assert call(standin, 'GET', '/repos/octo/app/actions/runners').status == 200  # not a DELETE: untouched
    resp = call(standin, 'DELETE', '/repos/octo/app/actions/runners/%d' % idle['id'])
    assert resp.status == 422 and 'is still running a job' in resp.json()['message']
    assert standin.runner_by_name('idle') is not None
    assert call(standin, 'DELETE', '/repos/octo/app/actions/runners/%d' % idle['id']).status == 204


def test_fault_slow(standin, gh):
    standin.fail('slow', delay=0.5, path='/actions/runners')
    started = time.monotonic()
    assert call(standin, 'GET', '/repos/octo/app/actions/runners').status == 200
    assert time.monotonic() - started >= 0.5
    started = time.monotonic()
    assert call(standin, 'GET', '/repos/octo/app/actions/runners').status == 200
    assert time.monotonic() - started < 0.5
    # a client timeout shorter than the delay
    standin.fail('slow', delay=3)
    quick = _gh(standin, timeout=1, lazy=True)
    with pytest.raises(Exception) as err:
        quick.get_repo('octo/app').get_self_hosted_runners().totalCount
    assert 'timed out' in str(err.value).lower() or 'timeout' in type(err.value).__name__.lower()


def test_fault_truncated(standin, gh):
    standin.fail('truncated', path='/actions/runners')
    resp = call(standin, 'GET', '/repos/octo/app/actions/runners')
    assert resp.status == 200 and int(resp.headers['Content-Length']) == len(resp.body)
    with pytest.raises(ValueError):
        resp.json()
    standin.fail('truncated')
    with pytest.raises(Exception):
        _gh(standin, lazy=True).get_repo('octo/app').get_self_hosted_runners().totalCount
    assert call(standin, 'GET', '/repos/octo/app/actions/runners').json()['total_count'] == 0


def test_faults_only_hit_github_requests_and_can_be_cleared(standin):
    standin.fail('server_error', count=5)
    assert control(standin, 'GET', '/state')[0] == 200
    assert len(standin.state()['faults']) == 1
    assert control(standin, 'DELETE', '/faults')[0] == 204
    assert call(standin, 'GET', '/rate_limit').status == 200
    with pytest.raises(ValueError):
        standin.fail('meteor')


# --- the rest ----------------------------------------------------------------------------------------------------

def test_rate_limit_endpoint_and_headers(standin, gh):
    headers = call(standin, 'GET', '/repos/octo/app/actions/runners').headers
    assert headers['X-RateLimit-Limit'] == '5000' and headers['X-RateLimit-Used'] == '1'
    assert gh.get_rate_limit().rate.remaining == 4999  # /rate_limit itself is free


def test_requests_are_logged(standin, gh):
    _gh(standin, lazy=True).get_repo('octo/app').get_self_hosted_runners().totalCount
    control(standin, 'POST', '/jobs', {'repo': 'octo/app', 'labels': ['self-hosted']})
    assert [(r['method'], r['path'], r['status'], r['op']) for r in standin.calls()] == [
        ('GET', '/repos/octo/app/actions/runners', 200, 'actions/list-self-hosted-runners-for-repo')]
    assert standin.requests[-1]['control'] and standin.requests[-1]['path'] == '/_standin/jobs'
    assert len(standin.calls(op='actions/list-self-hosted-runners-for-repo')) == 1


def test_unknown_repositories_404_without_auto_create():
    with StandIn(auto_create=False) as server:
        server.add_repo('octo/app')
        assert call(server, 'GET', '/repos/octo/app/actions/runners').status == 200
        assert call(server, 'GET', '/repos/octo/nope/actions/runners').status == 404
        assert call(server, 'GET', '/orgs/nope/actions/runners').status == 404
        assert server.violations == []


def test_ghes_api_prefix_and_runner_url():
    with StandIn(api_prefix='/api/v3', runner_url='http://172.17.0.1:9999', description='ghes-3.17') as server:
        assert server.url.endswith('/api/v3')
        gh = _gh(server)
        data = jit(gh, 'octo/app', 'r')
        assert decode(data['encoded_jit_config'])['url'] == 'http://172.17.0.1:9999'
        assert gh.get_repo('octo/app').get_self_hosted_runners().totalCount == 1
        assert server.calls()[-1]['path'] == '/api/v3/repos/octo/app/actions/runners'
        assert call(server, 'GET', '/repos/octo/app/actions/runners').status == 404  # not under the prefix
        assert len(server.take_violations()) == 1
        assert server.violations == []


def test_command_line_serves_in_the_foreground(tmp_path):
    env = dict(os.environ, PYTHONPATH=FIXTURES)
    proc = subprocess.Popen([sys.executable, '-m', 'github_standin.server', '--port', '0', '--token', 'T',
                             '--repo', 'octo/app'], stdout=subprocess.PIPE, env=env, cwd=str(tmp_path))
    try:
        url = proc.stdout.readline().decode().strip()
        assert url.startswith('http://127.0.0.1:')
        host, port = url[len('http://'):].split(':')
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.request('GET', '/repos/octo/app/actions/runners', headers={'Authorization': 'token T'})
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
