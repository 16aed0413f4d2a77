//! A rack of virtual machines, with the tools OpenStack Ironic's own CI uses for bare metal in VMs:
//! libvirt domains with no disk that boot from the network, sushy-tools' Redfish emulator with its
//! libvirt driver as their BMC, and virtualbmc (IPMI) for one of them. The test owns a network: a bridge
//! the domains' NICs are on, with the controller on the bridge's address, and a network namespace
//! plugged into the bridge holding dnsmasq, configured by `plinth-controller netboot dnsmasq-config`.
//!
//! The servers are enrolled from an Ironic-format file, with two more whose BMCs fail (a wrong password,
//! a BMC that never answers); `plinthctl nodes power on` starts the three domains through their BMCs;
//! each boots SeaBIOS, then its NIC's iPXE ROM, which gets an address and `plinth.ipxe` over TFTP from
//! dnsmasq, chains to the controller's boot listener and boots the discovery image; each agent registers
//! as its enrolled name, rack and labels (matched by MAC), a deployment runs a task on all three, and
//! one is powered off through IPMI (libvirt shows it shut off). The failing BMCs show `unknown` with
//! their errors and hold up nothing. Then the network's addresses come from another DHCP server and
//! dnsmasq answers only the PXE part (`dnsmasq-config --proxy`, in a second namespace): the powered-off
//! server, set to boot from the network through IPMI, boots again that way and its new agent key takes
//! its node. No BMC password is ever shown. Everything made (domains, emulators,
//! dnsmasq, namespaces, bridge, and libvirt's daemons when started here) is removed on every path.
//!
//! Needs root, qemu, dnsmasq, Debian's ipxe, libvirt and the BMC emulators (`PLINTH_BMC_VENV`).

use super::power::bmc_support::{self, virsh, Libvirt, Sushy, VirtualBmc, USER};
use plinth_e2e::images::{netboot_image, Scratch};
use plinth_e2e::netns::{require_root, unique, Bridge, Dnsmasq, Netns};
use plinth_e2e::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Long enough for three TCG boots at once on a busy two-core machine.
const BOOT: Duration = Duration::from_secs(1200);

const REDFISH_PASSWORD: &str = "Rack-Redfish-pa55";
const IPMI_PASSWORD: &str = "Rack-Ipmi-pa55";
const WRONG_PASSWORD: &str = "Not-The-Rack-pa55";
const SILENT_PASSWORD: &str = "Silent-Rack-pa55";
const TOKEN: &str = "rack-enrol-7f3c";
const PRODUCT: &str = "Plinth-Rack-VM";

/// A libvirt domain of the test's own, destroyed and undefined when dropped.
struct Domain {
    name: String,
    uuid: String,
    mac: String,
    serial: String,
    console: PathBuf,
}

impl Domain {
    /// Defines (does not start) a domain with no disk that boots from the network: SeaBIOS, a virtio
    /// NIC with `mac` on `bridge`, its serial console written to `dir`.
    fn define(dir: &Path, name: &str, mac: &str, serial: &str, bridge: &str, kind: &str) -> Domain {
        let console = dir.join(format!("{name}.console"));
        let xml = format!(
            "<domain type='{kind}'>
               <name>{name}</name>
               <memory unit='MiB'>2048</memory>
               <vcpu>1</vcpu>
               <sysinfo type='smbios'>
                 <system>
                   <entry name='manufacturer'>Plinth</entry>
                   <entry name='product'>{PRODUCT}</entry>
                   <entry name='serial'>{serial}</entry>
                 </system>
               </sysinfo>
               <os>
                 <type arch='x86_64' machine='pc'>hvm</type>
                 <boot dev='network'/>
                 <smbios mode='sysinfo'/>
               </os>
               <features><acpi/></features>
               <on_poweroff>destroy</on_poweroff>
               <on_reboot>restart</on_reboot>
               <devices>
                 <emulator>{}</emulator>
                 <interface type='bridge'>
                   <source bridge='{bridge}'/>
                   <mac address='{mac}'/>
                   <model type='virtio'/>
                 </interface>
                 <serial type='file'>
                   <source path='{}'/>
                   <target port='0'/>
                 </serial>
                 <memballoon model='none'/>
               </devices>
             </domain>",
            bmc_support::program("qemu-system-x86_64", "qemu-system-x86").display(),
            console.display()
        );
        let file = dir.join(format!("{name}.xml"));
        std::fs::write(&file, xml).unwrap();
        let _ = virsh(&["destroy", name]);
        let _ = virsh(&["undefine", name]);
        virsh(&["define", file.to_str().unwrap()]).unwrap();
        let mut domain = Domain {
            name: name.to_string(),
            uuid: String::new(),
            mac: mac.to_string(),
            serial: serial.to_string(),
            console,
        };
        domain.uuid = virsh(&["domuuid", name]).unwrap().trim().to_string();
        domain
    }

    fn state(&self) -> String {
        virsh(&["domstate", &self.name])
            .unwrap_or_else(|e| e)
            .trim()
            .to_string()
    }

    /// The last lines of its serial console, without the terminal's escapes.
    fn tail(&self, lines: usize) -> String {
        let text = std::fs::read(&self.console).unwrap_or_default();
        let text = String::from_utf8_lossy(&text);
        let plain: String = text
            .split('\u{1b}')
            .enumerate()
            .map(|(i, part)| {
                if i == 0 {
                    part
                } else {
                    part.split_once(|c: char| c.is_ascii_alphabetic())
                        .map_or(part, |(_, rest)| rest)
                }
            })
            .collect();
        tail(&plain, lines)
    }
}

impl Drop for Domain {
    fn drop(&mut self) {
        let _ = virsh(&["destroy", &self.name]);
        if let Err(e) = virsh(&["undefine", &self.name]) {
            eprintln!("cannot undefine the test domain {}: {e}", self.name);
        }
        // libvirt's log of the domain's qemu.
        let _ = std::fs::remove_file(format!("/var/log/libvirt/qemu/{}.log", self.name));
    }
}

/// Everything the test said through `plinthctl`, to look for passwords in at the end.
#[derive(Default)]
struct Said(String);

impl Said {
    fn plinthctl(&mut self, c: &Controller, args: &[&str]) -> (bool, String, String) {
        let (ok, out, err) = c.plinthctl(args);
        self.0.push_str(&out);
        self.0.push_str(&err);
        (ok, out, err)
    }

    fn enrolled(&mut self, c: &Controller) -> Vec<Value> {
        let (ok, out, err) = self.plinthctl(c, &["--output", "json", "nodes", "enrolled"]);
        assert!(ok, "{err}");
        serde_json::from_str::<Value>(&out)
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    }
}

fn server<'a>(all: &'a [Value], name: &str) -> &'a Value {
    all.iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("{name} is enrolled: {all:#?}"))
}

#[test]
#[ignore = "slow: boots three libvirt domains from the network under their BMC emulators; scripts/test.sh runs it with --ignored"]
fn slow_a_rack_of_libvirt_domains_powers_on_through_its_bmcs_boots_from_the_network_and_deploys() {
    require_root("a rack of libvirt domains on a network of the test's own");
    plinth_e2e::needs::qemu();
    bmc_support::venv();
    let dnsmasq_bin = bmc_support::program("dnsmasq", "dnsmasq-base");
    bmc_support::program("ipmitool", "ipmitool");
    let work = Scratch::new("4G");
    let image = work.path().join("netboot");
    let built = Instant::now();
    let made = netboot_image(&image);
    assert!(image.join("initrd.img").is_file(), "{made}");
    eprintln!(
        "built the netboot image in {:.1} s",
        built.elapsed().as_secs_f64()
    );
    let accel = super::netboot::accelerator(&image.join("vmlinuz"), work.path());
    let kind = if accel == "kvm" { "kvm" } else { "qemu" };
    eprintln!("the domains run under {accel}");
    // The domains' consoles: written by qemu, which libvirt runs as a user of its own.
    let consoles = tempfile::Builder::new()
        .prefix("plinth-rack-")
        .tempdir()
        .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(consoles.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    // Dropped last: the daemons outlive the domains.
    let _libvirt = Libvirt::ensure();

    // The network: a bridge in this namespace (the controller on its address, the domains' NICs on it)
    // and a namespace plugged into it for dnsmasq.
    let u = unique(7);
    let bridge = Bridge::new(&format!("plrk{u}"), 3);
    let ns = Netns::new(&format!("plinth-rack-{u}"));
    let inner = format!("plri{u}");
    bridge.plug(&ns, &format!("plro{u}"), &inner, Some(2));

    // The controller, on the bridge's address: agents are admitted by the enrolment token, which the
    // boot listener puts on their command line.
    let config = work.path().join("controller.toml");
    std::fs::write(&config, "").unwrap();
    let mut c = Controller::start_listening(
        &bridge.address,
        &[
            "--enrollment-token",
            TOKEN,
            "--config",
            config.to_str().unwrap(),
        ],
    );
    let boot = reserve_port();
    let boot_url = format!("http://{}:{}", bridge.address, boot.port);
    std::fs::write(
        &config,
        format!(
            "[power]\ninterval_secs = 2\ntimeout_secs = 3\n\n\
             [netboot]\nlisten = \"{}:{}\"\nurl = \"{boot_url}\"\ncontroller_url = \"{}\"\n\
             images = {:?}\nkernel_args = \"console=ttyS0\"\npass_enrollment_token = true\n",
            bridge.address,
            boot.port,
            c.url,
            image.display().to_string()
        ),
    )
    .unwrap();
    boot.release();
    c.restart();

    // dnsmasq in the namespace, with the configuration and TFTP root the controller writes.
    let mut dnsmasq = Dnsmasq::for_boot(
        &c,
        &ns,
        &dnsmasq_bin,
        (&bridge, &inner),
        &boot_url,
        work.path(),
    );

    // Three servers, their BMCs: Redfish (sushy's libvirt driver) for all, IPMI (virtualbmc) for one.
    let pid = std::process::id();
    let domains: Vec<Domain> = (1..=3u8)
        .map(|i| {
            Domain::define(
                consoles.path(),
                &format!("plinth-rack-{pid}-{i}"),
                &format!("52:54:00:7c:a0:{i:02x}"),
                &format!("RACK-000{i}"),
                &bridge.name,
                kind,
            )
        })
        .collect();
    let uuids: Vec<String> = domains.iter().map(|d| d.uuid.clone()).collect();
    let sushy = Sushy::start_libvirt(&uuids, REDFISH_PASSWORD);
    let vbmc = VirtualBmc::for_domain(&domains[2].name, IPMI_PASSWORD);
    // A BMC that accepts connections and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();

    // The Ironic file, as `openstack baremetal create` reads it.
    let port = |mac: &str| json!([{"address": mac}]);
    let redfish = |i: usize, password: &str| {
        json!({
            "redfish_address": sushy.url,
            "redfish_system_id": uuids[i],
            "redfish_username": USER,
            "redfish_password": password,
        })
    };
    let extra = |n: u8| json!({"rack": "r7", "row": "b", "slot": format!("u{n}")});
    let file = json!({"nodes": [
        {"name": "rack-01", "driver": "redfish", "driver_info": redfish(0, REDFISH_PASSWORD),
         "extra": extra(1), "ports": port(&domains[0].mac), "resource_class": "baremetal"},
        {"name": "rack-02", "driver": "redfish", "driver_info": redfish(1, REDFISH_PASSWORD),
         "extra": extra(2), "ports": port(&domains[1].mac)},
        {"name": "rack-03", "driver": "ipmi",
         "driver_info": {"ipmi_address": "127.0.0.1", "ipmi_port": vbmc.port,
                         "ipmi_username": USER, "ipmi_password": IPMI_PASSWORD},
         "extra": extra(3), "ports": port(&domains[2].mac)},
        {"name": "rack-wrong", "driver": "redfish", "driver_info": redfish(0, WRONG_PASSWORD),
         "extra": extra(4), "ports": port("52:54:00:7c:a0:f1")},
        {"name": "rack-silent", "driver": "redfish",
         "driver_info": {"redfish_address": format!("http://127.0.0.1:{silent_port}"),
                         "redfish_system_id": "1", "redfish_username": USER,
                         "redfish_password": SILENT_PASSWORD},
         "extra": extra(5), "ports": port("52:54:00:7c:a0:f2")},
    ]});
    let enrollment = work.path().join("nodes.json");
    std::fs::write(&enrollment, serde_json::to_string_pretty(&file).unwrap()).unwrap();
    let mut said = Said::default();
    let (ok, out, err) =
        said.plinthctl(&c, &["nodes", "enroll", "-f", enrollment.to_str().unwrap()]);
    assert!(ok, "enroll: {out}{err}");

    // Power on: two through Redfish (sushy starts their domains), one through IPMI (virtualbmc).
    let started = Instant::now();
    let (ok, out, err) = said.plinthctl(&c, &["nodes", "power", "on", "rack-01", "rack-02"]);
    assert!(ok, "power on: {out}{err}\n{}", tail(&sushy.log(), 30));
    let powered = wait_for(Duration::from_secs(60), || {
        said.plinthctl(&c, &["nodes", "power", "on", "rack-03"]).0
    });
    assert!(powered, "rack-03 powers on through IPMI");
    for d in &domains {
        let running = wait_for(Duration::from_secs(60), || d.state() == "running");
        assert!(running, "{} runs: {}", d.name, d.state());
    }
    eprintln!("the three domains run, their BMCs started them");

    // They boot from the network and register as their enrolled names.
    let mut listed = Value::Null;
    let mut last_report = Instant::now();
    let registered = wait_for(BOOT, || {
        listed = c.api.get("/nodes").unwrap_or(Value::Null);
        let n = listed.as_array().map_or(0, Vec::len);
        if last_report.elapsed() > Duration::from_secs(60) {
            last_report = Instant::now();
            eprintln!("{:.0} s: {n} registered", started.elapsed().as_secs_f64());
        }
        n >= 3
    });
    assert!(
        registered,
        "the three register: {listed:#}\n{}\ndnsmasq: {}",
        domains
            .iter()
            .map(|d| format!("{} ({}):\n{}", d.name, d.state(), d.tail(30)))
            .collect::<Vec<_>>()
            .join("\n"),
        dnsmasq.said()
    );
    eprintln!(
        "the three registered {:.1} s after they were powered on",
        started.elapsed().as_secs_f64()
    );
    let nodes = listed.as_array().unwrap().clone();
    assert_eq!(nodes.len(), 3, "{listed:#}");
    let mut ids = Vec::new();
    for (i, d) in domains.iter().enumerate() {
        let name = format!("rack-0{}", i + 1);
        let line = nodes
            .iter()
            .find(|n| n["name"] == name.as_str())
            .unwrap_or_else(|| panic!("{name} registered: {listed:#}"));
        assert_eq!(line["rack"], "r7", "{line:#}");
        assert_eq!(line["admission"], "accepted", "{line:#}");
        let id = line["id"].as_u64().unwrap();
        let shown = c.api.get(&format!("/nodes/{id}")).unwrap();
        assert_eq!(
            shown["labels"],
            json!({"rack": "r7", "row": "b", "slot": format!("u{}", i + 1)}),
            "{shown:#}"
        );
        let facts = &shown["facts"];
        assert_eq!(
            facts["dmi"]["product_serial"],
            d.serial.as_str(),
            "{facts:#}"
        );
        assert_eq!(facts["dmi"]["product_name"], PRODUCT, "{facts:#}");
        let nics = facts["nics"].as_array().cloned().unwrap_or_default();
        assert!(nics.iter().any(|n| n["mac"] == d.mac.as_str()), "{facts:#}");
        ids.push(id);
    }
    // dnsmasq handed out the addresses and iPXE fetched its script over TFTP.
    let log = std::fs::read_to_string(&dnsmasq.log).unwrap_or_default();
    for d in &domains {
        assert!(
            log.contains(&format!("DHCPACK({inner})")) && log.contains(&d.mac),
            "dnsmasq answered {}: {}",
            d.mac,
            tail(&log, 40)
        );
    }
    assert!(log.contains("plinth.ipxe"), "{}", tail(&log, 40));

    // A deployment's task runs on all three.
    let graph = json!({"default": {"tasks": [shell(
        "whoami",
        &["*"],
        "cat /sys/class/dmi/id/product_serial; cat /proc/cmdline",
    )]}});
    let cluster = c.api.cluster_with_graph("rack", graph, &ids);
    let deployed = Instant::now();
    let dep = c.api.deploy(cluster, "graph_type=default");
    let report = c.api.wait_deployment(dep, Duration::from_secs(600));
    assert_eq!(report["status"], "success", "{report:#}");
    eprintln!(
        "the deployment took {:.1} s",
        deployed.elapsed().as_secs_f64()
    );
    for (i, d) in domains.iter().enumerate() {
        let name = format!("rack-0{}", i + 1);
        let task = task_line(&report, &name, "whoami").unwrap_or_else(|| panic!("{report:#}"));
        assert_eq!(task["status"], "succeeded", "{task:#}");
        let out = task["stdout_tail"].as_str().unwrap_or_default();
        assert!(out.contains(&d.serial), "{task:#}");
        assert!(
            out.contains(&format!("plinth.controller={}", c.url)),
            "{task:#}"
        );
    }

    // rack-03 off through IPMI: libvirt shows its domain shut off.
    let (ok, out, err) = said.plinthctl(&c, &["nodes", "power", "off", "rack-03"]);
    assert!(ok && out.contains("off"), "{out}{err}");
    assert_eq!(vbmc.domain_state(), "shut off");
    assert_eq!(domains[2].state(), "shut off");

    // The power loop: the two on, rack-03 off, the failing BMCs unknown with their errors.
    let waited = Instant::now();
    let all = loop {
        let all = said.enrolled(&c);
        let done = server(&all, "rack-01")["power"]["state"] == "on"
            && server(&all, "rack-02")["power"]["state"] == "on"
            && server(&all, "rack-03")["power"]["state"] == "off"
            && server(&all, "rack-wrong")["power"]["error"].is_string()
            && server(&all, "rack-silent")["power"]["error"].is_string();
        if done {
            break all;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(90),
            "the power loop reads every BMC: {all:#?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    for name in ["rack-wrong", "rack-silent"] {
        assert_eq!(server(&all, name)["power"]["state"], "unknown", "{all:#?}");
    }
    let wrong = server(&all, "rack-wrong")["power"]["error"]
        .as_str()
        .unwrap()
        .to_lowercase();
    assert!(
        wrong.contains("credential") || wrong.contains("401"),
        "{wrong}"
    );
    let (ok, table, err) = said.plinthctl(&c, &["nodes", "enrolled"]);
    assert!(ok, "{err}");
    for name in ["rack-wrong", "rack-silent"] {
        let row = table
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{table}"));
        assert!(row.contains("unknown"), "{table}");
    }

    // Proxy DHCP: another server hands out addresses (a plain dnsmasq, no boot options, in the
    // namespace), and a dnsmasq configured with `--proxy` in a second namespace answers the PXE part
    // only. rack-03 is set to boot from the network through IPMI (which opens its node to a new agent
    // key) and powered on: it boots again through the proxy, and its new agent takes its node.
    let before = c.api.get(&format!("/nodes/{}", ids[2])).unwrap()["node_key"].clone();
    dnsmasq.stop();
    let plain = Dnsmasq::start(
        &ns,
        &dnsmasq_bin,
        work.path(),
        "dhcp",
        &format!(
            "port=0\ninterface={inner}\nbind-interfaces\ndhcp-range={},{},255.255.255.0,1h\nlog-dhcp\n",
            bridge.host(160),
            bridge.host(199)
        ),
    );
    let proxy_ns = Netns::new(&format!("plinth-rackp-{u}"));
    let proxy_inner = format!("plpi{u}");
    bridge.plug(&proxy_ns, &format!("plpo{u}"), &proxy_inner, Some(3));
    let (ok, proxy_conf, err) = c.command(&[
        "netboot",
        "dnsmasq-config",
        "--interface",
        &proxy_inner,
        "--proxy",
        &bridge.host(0),
        "--boot-url",
        &boot_url,
        "--tftp-root",
        work.path().join("tftp-proxy").to_str().unwrap(),
    ]);
    assert!(ok, "dnsmasq-config --proxy: {err}");
    let proxy = Dnsmasq::start(&proxy_ns, &dnsmasq_bin, work.path(), "proxy", &proxy_conf);
    let (ok, out, err) = said.plinthctl(
        &c,
        &[
            "--output",
            "json",
            "nodes",
            "boot-device",
            "rack-03",
            "pxe",
            "--once",
        ],
    );
    assert!(ok, "boot-device through IPMI: {out}{err}");
    let set: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(set["rekey"], true, "{set:#}");
    let rebooted = Instant::now();
    let (ok, out, err) = said.plinthctl(&c, &["nodes", "power", "on", "rack-03"]);
    assert!(ok, "{out}{err}");
    let mut shown = Value::Null;
    let rekeyed = wait_for(BOOT, || {
        shown = c
            .api
            .get(&format!("/nodes/{}", ids[2]))
            .unwrap_or(Value::Null);
        shown["node_key"].is_string() && shown["node_key"] != before
    });
    let logs = || {
        format!(
            "DHCP: {}\nproxy: {}",
            tail(&std::fs::read_to_string(&plain.log).unwrap_or_default(), 30),
            tail(&std::fs::read_to_string(&proxy.log).unwrap_or_default(), 30)
        )
    };
    assert!(
        rekeyed,
        "rack-03 boots again through proxy DHCP and its new agent takes its node: {shown:#}\n{}\n{}",
        domains[2].tail(40),
        logs()
    );
    eprintln!(
        "rack-03 booted again through proxy DHCP and registered {:.1} s after it was powered on",
        rebooted.elapsed().as_secs_f64()
    );
    assert_eq!(shown["name"], "rack-03", "{shown:#}");
    assert_eq!(c.api.node_ids().len(), 3, "still three nodes");
    let proxied = std::fs::read_to_string(&proxy.log).unwrap_or_default();
    assert!(
        proxied.contains(&domains[2].mac) && proxied.contains("plinth.ipxe"),
        "{}",
        logs()
    );

    // No BMC password anywhere an operator looks.
    let shown = format!("{}{}", said.0, c.log());
    for secret in [
        REDFISH_PASSWORD,
        IPMI_PASSWORD,
        WRONG_PASSWORD,
        SILENT_PASSWORD,
    ] {
        assert!(!shown.contains(secret), "{secret} was shown");
    }
    eprintln!(
        "the rack test took {:.1} s from power on",
        started.elapsed().as_secs_f64()
    );
    drop(silent);
    dnsmasq.stop();
    drop(sushy);
    drop(vbmc);
    drop(domains);
}
