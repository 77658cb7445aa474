# -*- coding: utf-8 -*-
"""Task definitions kept once checked (aws.checked): a document checked once is read back, the same as checked
(every valid document of ../shared/ecs-task-definitions), with its warning, without botocore's model; a refused
document is never kept; another content, field, code or botocore version is another key; a folder that someone
else may write is never used."""

from __future__ import absolute_import, division, print_function

import copy
import glob
import json
import os
import stat

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.aws import checked as _td_checked
from ansible_collections.drover.fleet.plugins.module_utils.aws import model as _td_model
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason='the folder is root\'s alone')

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(REPO, '..', 'shared', 'ecs-task-definitions')


def td(**extra):
    doc = {'family': 'web', 'containerDefinitions': [{'name': 'web', 'image': 'drover.local/busybox:1',
                                                      'memory': '64', 'essential': 'true'}]}
    doc.update(extra)
    return doc


def no_model(monkeypatch):
    """From here on, a check by the model fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError('the model was asked')
    monkeypatch.setattr(_td_model, 'normalize', refuse)


def files(root):
    return sorted(glob.glob(os.path.join(str(root), '*', '*.json')))


def test_a_document_checked_once_is_read_back_with_its_warning(tmp_path, monkeypatch):
    doc = td(taskRoleArn='', pidMode='')
    warnings = []
    first = _td_checked.Checked(str(tmp_path))(copy.deepcopy(doc), 'tasks[0].task_definition', warnings)
    assert first == _td_model.normalize(copy.deepcopy(doc), 'tasks[0].task_definition')
    assert first['containerDefinitions'][0]['memory'] == 64 and 'taskRoleArn' not in first
    assert len(warnings) == 1 and 'tasks[0].task_definition.taskRoleArn' in warnings[0]
    [kept] = files(tmp_path)
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(kept)).st_mode) == 0o700

    no_model(monkeypatch)
    again = []
    assert _td_checked.Checked(str(tmp_path))(copy.deepcopy(doc), 'tasks[0].task_definition', again) == first
    assert again == warnings
    with pytest.raises(AssertionError):                     # another field: another key
        _td_checked.Checked(str(tmp_path))(copy.deepcopy(doc), 'tasks[1].task_definition', [])
    with pytest.raises(AssertionError):                     # another content: another key
        _td_checked.Checked(str(tmp_path))(td(cpu='256'), 'tasks[0].task_definition', [])


def test_a_refused_document_is_not_kept_and_is_refused_each_time(tmp_path):
    doc = td(containerDefinitions=[{'name': 'web', 'image': 'x', 'memory': 'lots'}])
    for dummy in range(2):
        with pytest.raises(SpecError) as err:
            _td_checked.Checked(str(tmp_path))(copy.deepcopy(doc), 'task_definition', [])
        assert 'task_definition.containerDefinitions[0].memory' in str(err.value)
    assert files(tmp_path) == []


def test_another_code_or_botocore_version_is_another_folder_and_old_folders_go(tmp_path, monkeypatch):
    _td_checked.Checked(str(tmp_path))(td(), 'task_definition', [])
    [first] = os.listdir(str(tmp_path))
    old = tmp_path / first
    os.utime(str(old), (1, 1))                              # not used for years
    monkeypatch.setattr(_td_model, 'model_version', lambda: '0.0.1')
    _td_checked.Checked(str(tmp_path))(td(), 'task_definition', [])
    [second] = os.listdir(str(tmp_path))                    # the old folder went when the new one was made
    assert second != first and second.endswith('-0.0.1')
    monkeypatch.setattr(_td_checked, '_code_digest', lambda: 'f' * 40)
    _td_checked.Checked(str(tmp_path))(td(), 'task_definition', [])
    assert sorted(os.listdir(str(tmp_path))) == sorted([second, 'f' * 40 + '-0.0.1'])


def test_a_folder_someone_else_may_write_is_not_used(tmp_path, monkeypatch):
    _td_checked.Checked(str(tmp_path))(td(), 'task_definition', [])
    [folder] = os.listdir(str(tmp_path))
    no_model(monkeypatch)
    for path in (tmp_path / folder, tmp_path):
        os.chmod(str(path), 0o777)
        with pytest.raises(AssertionError):                 # not read: the model asked again
            _td_checked.Checked(str(tmp_path))(td(), 'task_definition', [])
        os.chmod(str(path), 0o700)
    assert _td_checked.Checked(str(tmp_path))(td(), 'task_definition', [])['family'] == 'web'


def test_every_valid_document_of_the_corpus_reads_back_as_checked(tmp_path, monkeypatch):
    if not os.path.isdir(CORPUS):
        pytest.skip('no corpus at %s' % CORPUS)
    checked, expected = _td_checked.Checked(str(tmp_path)), {}
    for path in sorted(glob.glob(os.path.join(CORPUS, '*.json'))):
        with open(path) as handle:
            doc = json.load(handle)
        try:
            expected[path] = (_td_model.normalize(copy.deepcopy(doc), 'task_definition'), doc)
        except SpecError:
            continue
        assert checked(copy.deepcopy(doc), 'task_definition', []) == expected[path][0]
    assert len(expected) >= 75 and len(files(tmp_path)) == len(set(
        json.dumps(doc, sort_keys=True) for dummy, doc in expected.values()))
    no_model(monkeypatch)
    for path, (document, doc) in expected.items():
        again = _td_checked.Checked(str(tmp_path))(copy.deepcopy(doc), 'task_definition', [])
        assert again == document and json.dumps(again) == json.dumps(document), path   # the same keys, in order


def test_documents_not_read_for_a_week_go_and_models_of_ones_own_keep_nothing(tmp_path, monkeypatch):
    _td_checked.Checked(str(tmp_path))(td(), 'task_definition', [])
    [old] = files(tmp_path)
    os.utime(old, (1, 1))
    _td_checked.Checked(str(tmp_path))(td(cpu='256'), 'task_definition', [])     # a new document: the old one goes
    assert len(files(tmp_path)) == 1 and old not in files(tmp_path)
    monkeypatch.setenv('AWS_DATA_PATH', str(tmp_path / 'models'))
    no_model(monkeypatch)
    with pytest.raises(AssertionError):                                         # checked again, not read back
        _td_checked.Checked(str(tmp_path))(td(cpu='256'), 'task_definition', [])
