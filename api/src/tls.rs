//! The controller's certificate as a client reads it: the names and addresses it carries, so that a
//! client reaching the controller by another name can say which names would work (and the controller
//! can warn at start about names its certificate lacks).

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use std::path::Path;

/// The names and addresses the certificate in the PEM file at `cert` names (its subject alternative
/// names, DNS names and IP addresses as text); empty when it cannot be read.
pub fn certificate_names(cert: &Path) -> Vec<String> {
    let Ok(Some(der)) = CertificateDer::pem_file_iter(cert).map(|mut it| it.next()) else {
        return Vec::new();
    };
    let Ok(der) = der else {
        return Vec::new();
    };
    names_in(der.as_ref())
}

/// The subject alternative names of a DER certificate, as text.
pub fn names_in(der: &[u8]) -> Vec<String> {
    use x509_parser::extensions::GeneralName;
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(der) else {
        return Vec::new();
    };
    let Ok(Some(san)) = parsed.subject_alternative_name() else {
        return Vec::new();
    };
    san.value
        .general_names
        .iter()
        .filter_map(|n| match n {
            GeneralName::DNSName(d) => Some(d.to_string()),
            GeneralName::IPAddress(b) => match b.len() {
                4 => <[u8; 4]>::try_from(*b)
                    .ok()
                    .map(|a| std::net::IpAddr::from(a).to_string()),
                16 => <[u8; 16]>::try_from(*b)
                    .ok()
                    .map(|a| std::net::IpAddr::from(a).to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}
