"""Ironic's own choice of a root device for each case on standard input, for the differential test
(root_device_vs_ironic.rs). Input: a JSON list of cases, each {"devices": [...], "hints": {...} or null},
the devices as Ironic's agent lists them (name "/dev/sda", size in bytes, model, ...). Output: a JSON
list, one answer per case: {"chosen": "/dev/sda"} or {"chosen": null}, or {"error": "..."} when Ironic
raised. With hints, ironic-lib's match_root_device_hints; without, ironic-python-agent's guess_root_disk.
"""
import json
import logging
import sys
import types

from ironic_lib import utils as ironic_lib_utils
from ironic_python_agent import errors as ipa_errors
from ironic_python_agent import utils as ipa_utils

logging.disable(logging.CRITICAL)


def choose(case):
    devices = case["devices"]
    hints = case["hints"]
    if not hints:
        blocks = [types.SimpleNamespace(name=d["name"], size=d["size"]) for d in devices]
        try:
            return {"chosen": ipa_utils.guess_root_disk(blocks).name}
        except ipa_errors.DeviceNotFound:
            return {"chosen": None}
    try:
        device = ironic_lib_utils.match_root_device_hints(devices, hints)
    except Exception as e:  # Ironic refuses the hints, or fails while matching them.
        return {"error": "%s: %s" % (type(e).__name__, e)}
    return {"chosen": device["name"] if device else None}


json.dump([choose(case) for case in json.load(sys.stdin)], sys.stdout)
