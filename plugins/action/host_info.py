# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""drover.fleet.host_info runs on the host as any module does; its payload is kept on the controller from one run
to the next (plugin_utils/_payload_cache.py)."""

from __future__ import annotations

from ansible_collections.drover.fleet.plugins.plugin_utils._payload_cache import PayloadCachedAction


class ActionModule(PayloadCachedAction):
    """drover.fleet.host_info, its payload kept between runs."""
