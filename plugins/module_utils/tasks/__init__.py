# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tasks: groups of containers on the engine, declared as ECS task definitions, converged one pass at a time.

Owns: the declaration (spec), the container settings table every check, doc and engine call derives from
(settings), the task level - size, volumes, placement, namespaces (level) and its memberOf grammar (placement),
the start order (order), the decider of one task (plan), the pass (apply), what a host holds of tasks read
without changing it (look), and the revision records of services a host keeps beside its tasks (revisions).
Must not: place services across hosts (services does) or run runner pools (pools does).
Layers: revisions, spec, settings, level, placement -> order, plan -> look -> apply. Imports aws, network, gpu and
host.
"""
