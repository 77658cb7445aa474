# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWS: the one adapter that talks to AWS, and ECS task definitions as AWS's own model reads them.

Owns: the AWS calls of a task's start (calls: STS, ECR, Secrets Manager, SSM, S3), a task definition checked
against botocore's ECS model (model) and kept once checked (checked), template placeholders (template), and what
the awslogs and FireLens log routes and a log driver's destinations become (awslogs, firelens,
log_destinations).
Must not: touch the engine, the store or the network namespaces.
Layers: calls (adapter); model -> checked; template; awslogs, firelens, log_destinations. Imports only the shared
bottom.
"""
