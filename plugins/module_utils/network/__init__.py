# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Task networks: the awsvpc network namespace of a task, and its credential link to the credentials endpoint.

Owns: the netns declaration (spec), the steps that build or tear one down (plan, pure), carrying them out (apply),
the kernel's networking (netlink, the only file that talks to netlink, iptables and udhcpc), the credentials
endpoint's redirect (endpoint) and the per-task credential token (credtoken).
Must not: know containers beyond the holder, nor tasks beyond their names.
Layers: netlink (adapter); spec -> plan -> apply; credtoken, endpoint. Imports host.
"""
