"""The generated Syncthing configs keep every daemon on this machine (no daemon needed to check)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from tests.sync.harness import Daemon, config_xml

OFF = {
    "globalAnnounceEnabled": "false",  # global discovery
    "localAnnounceEnabled": "false",  # LAN broadcast discovery
    "relaysEnabled": "false",
    "natEnabled": "false",  # UPnP / NAT-PMP
    "stunKeepaliveStartS": "0",  # STUN
    "announceLANAddresses": "false",
    "urAccepted": "-1",  # usage reporting declined
    "crashReportingEnabled": "false",
    "autoUpgradeIntervalH": "0",
    "startBrowser": "false",
}


def pair(tmp_path: Path) -> tuple[Daemon, Daemon]:
    a = Daemon("machine-a", tmp_path / "a-home", tmp_path / "a & store", device_id="AAAA-AAAA")
    b = Daemon("machine-b", tmp_path / "b-home", tmp_path / "b-store", device_id="BBBB-BBBB")
    return a, b


def test_the_config_listens_and_serves_its_api_on_loopback_only(tmp_path: Path) -> None:
    a, b = pair(tmp_path)
    root = ET.fromstring(config_xml(a, b))
    assert root.findtext("gui/address") == f"127.0.0.1:{a.gui_port}"
    assert [e.text for e in root.iterfind("options/listenAddress")] == [f"tcp://127.0.0.1:{a.sync_port}"]


def test_every_device_is_dialled_at_an_explicit_loopback_address(tmp_path: Path) -> None:
    a, b = pair(tmp_path)
    root = ET.fromstring(config_xml(a, b))
    addresses = {d.get("id"): [e.text for e in d.iterfind("address")] for d in root.iterfind("device")}
    assert addresses == {
        "AAAA-AAAA": [f"tcp://127.0.0.1:{a.sync_port}"],
        "BBBB-BBBB": [f"tcp://127.0.0.1:{b.sync_port}"],
    }


def test_discovery_relays_nat_reporting_and_upgrades_are_all_off(tmp_path: Path) -> None:
    a, b = pair(tmp_path)
    options = ET.fromstring(config_xml(a, b)).find("options")
    assert options is not None
    assert {name: options.findtext(name) for name in OFF} == OFF


def test_the_shared_folder_path_is_escaped_and_shared_with_both_devices(tmp_path: Path) -> None:
    a, b = pair(tmp_path)
    folder = ET.fromstring(config_xml(a, b)).find("folder")
    assert folder is not None and folder.get("path") == str(a.folder)
    assert [d.get("id") for d in folder.iterfind("device")] == ["AAAA-AAAA", "BBBB-BBBB"]
