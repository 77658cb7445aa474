# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Services: a desired count of a task placed across the fleet's hosts, deployed health-gated and rolled back.

Owns: the placement of every service's instances over the hosts (plan) and the deployments, with their records
sealed by the controller (deploy). Both run on the controller, from the hosts' looks (tasks.look); a host keeps
only its revision records (tasks.revisions).
Must not: touch a host: the roles converge what the placement decides, through ecs_task.
Layers: plan, deploy (deciders). Imports front, tasks.
"""
