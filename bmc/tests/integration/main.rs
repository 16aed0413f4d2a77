//! plinth-bmc against real BMC emulators: sushy-tools (Redfish) and virtualbmc over a libvirt domain
//! (IPMI, through ipmitool). `scripts/bmc-emulators.sh` provides them; see `support`.

mod ipmi;
mod redfish;
mod support;
