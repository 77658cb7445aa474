# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host: what every pass opens and keeps on the machine it runs on.

Owns: the store and the host lock (store), the collection's own files and directories opened without following
links (files), the cgroup file system (cgroup), the metrics text file (metrics), opening a host for a pass in
its order - engine, lock, store (opening), and the one look at what a host has of what the modules need (check).
Must not: decide anything of tasks, pools or services, or import any package but the shared bottom (_docker,
_spec_base).
Layers: store, files, cgroup, metrics (adapters and records) -> opening, check.
"""
