# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front: what the modules take - the argument specs both front ends read (argspecs: the Ansible modules and
the Salt states), and the Ansible module built from them (args).

Owns: every module's options, types, choices and defaults, and AnsibleModule made from them.
Must not: validate declarations (the spec modules do) or talk to anything; argspecs imports nothing of Ansible's.
Layers: argspecs -> args. Imports tasks (the container settings), gpu and host.
"""
