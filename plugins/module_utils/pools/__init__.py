# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runner pools: slots of ephemeral just-in-time GitHub Actions runners, one container per job.

Owns: the declaration (spec), holds, backoff and which slots start or stop (plan, pure), the pass (apply), GitHub
(github, the only file that talks to it), a slot's own rootless engine (slot_engine), the pools' registry mirror
(mirror), caches (caches) and what a runner image gives the pass (runner_image).
Must not: converge tasks (it reads the task decider's reasons and names only).
Layers: spec -> plan -> slot_engine, runner_image, mirror, caches, github -> apply. Imports tasks, gpu and host.
"""
