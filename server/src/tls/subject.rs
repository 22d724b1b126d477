//! A certificate's subject as ZooKeeper names it in `x509` ACL ids: Java's
//! `X500Principal.getName()`, the RFC 2253 form. The relative distinguished names go
//! last-encoded first, joined by `,` (the attributes of one RDN by `+`); CN, C, L, ST,
//! O, OU, STREET, DC and UID by keyword, any other attribute as its dotted OID with the
//! value's DER in hex (`1.2.840.113549.1.9.1=#16...`); in string values `,=+<>#;"\`
//! are escaped with a backslash, as are leading and trailing spaces.

use x509_parser::der_parser::asn1_rs::{Any, Class, Tag};
use x509_parser::prelude::{FromDer, X509Certificate};
use x509_parser::x509::{AttributeTypeAndValue, X509Name};

/// The subject of a DER certificate, or `None` if it does not parse.
pub fn subject_name(der: &[u8]) -> Option<String> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    Some(rfc2253(cert.subject()))
}

fn rfc2253(name: &X509Name<'_>) -> String {
    let rdns: Vec<String> = name
        .iter_rdn()
        .map(|rdn| rdn.iter().map(attribute).collect::<Vec<_>>().join("+"))
        .collect();
    rdns.into_iter().rev().collect::<Vec<_>>().join(",")
}

/// The keywords Java's RFC 2253 form uses (`AVAKeyword`'s rfc2253Compliant ones).
fn keyword(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.9" => "STREET",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        _ => return None,
    })
}

fn attribute(attr: &AttributeTypeAndValue<'_>) -> String {
    let oid = attr.attr_type().to_id_string();
    let value = attr.attr_value();
    match (keyword(&oid), string_value(value)) {
        (Some(keyword), Some(text)) => format!("{keyword}={}", escape(&text)),
        (keyword, _) => format!("{}=#{}", keyword.unwrap_or(&oid), hex(&der_of(value))),
    }
}

/// The text of the string types Java's `isDerString` admits, its bytes read as UTF-8.
fn string_value(value: &Any<'_>) -> Option<String> {
    if value.header.class() != Class::Universal {
        return None;
    }
    match value.tag() {
        Tag::PrintableString
        | Tag::T61String
        | Tag::Ia5String
        | Tag::GeneralString
        | Tag::Utf8String
        | Tag::BmpString => Some(String::from_utf8_lossy(value.data).into_owned()),
        _ => None,
    }
}

fn escape(text: &str) -> String {
    const ESCAPED: &str = ",=+<>#;\"\\";
    let mut chars: Vec<String> = Vec::with_capacity(text.len());
    for c in text.chars() {
        chars.push(match c {
            '\0' => "\\00".to_owned(),
            c if ESCAPED.contains(c) => format!("\\{c}"),
            c => c.to_string(),
        });
    }
    let blank = |s: &String| s == " " || s == "\r";
    let lead = chars.iter().take_while(|s| blank(s)).count();
    let trail = chars.iter().rev().take_while(|s| blank(s)).count();
    let len = chars.len();
    let mut out = String::with_capacity(text.len() + 4);
    for (i, s) in chars.iter().enumerate() {
        if i < lead || i >= len - trail {
            out.push('\\');
        }
        out.push_str(s);
    }
    out
}

/// The value's DER encoding: identifier, definite length, content.
fn der_of(value: &Any<'_>) -> Vec<u8> {
    let header = &value.header;
    let class = (header.class() as u8) << 6;
    let constructed = if header.is_constructed() { 0x20 } else { 0 };
    let tag = header.tag().0;
    let mut out = Vec::with_capacity(value.data.len() + 8);
    if tag < 31 {
        out.push(class | constructed | tag as u8);
    } else {
        out.push(class | constructed | 0x1f);
        let mut groups = Vec::new();
        let mut rest = tag;
        loop {
            groups.push((rest & 0x7f) as u8);
            rest >>= 7;
            if rest == 0 {
                break;
            }
        }
        let last = groups.len() - 1;
        for (i, group) in groups.iter().rev().enumerate() {
            out.push(if i == last { *group } else { group | 0x80 });
        }
    }
    let len = value.data.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(value.data);
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `id` reads as a distinguished name (`X500Principal`'s parse, loosely): one
/// or more `type=value` parts. Used to refuse malformed `x509` ACL ids.
pub fn is_distinguished_name(id: &str) -> bool {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut chars = id.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                current.push(c);
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            ',' | '+' | ';' => parts.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    parts.push(current);
    parts.iter().all(|part| {
        part.split_once('=')
            .is_some_and(|(kind, _)| !kind.trim().is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certificate(build: impl FnOnce(&mut rcgen::DistinguishedName)) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        let mut name = rcgen::DistinguishedName::new();
        build(&mut name);
        params.distinguished_name = name;
        let key = rcgen::KeyPair::generate().expect("key");
        params.self_signed(&key).expect("cert").der().to_vec()
    }

    #[test]
    fn names_are_written_most_specific_first_as_java_does() {
        let der = certificate(|name| {
            name.push(rcgen::DnType::CountryName, "US");
            name.push(rcgen::DnType::OrganizationName, "Paddock");
            name.push(rcgen::DnType::OrganizationalUnitName, "Ops");
            name.push(rcgen::DnType::CommonName, "client one");
        });
        assert_eq!(
            subject_name(&der).as_deref(),
            Some("CN=client one,OU=Ops,O=Paddock,C=US")
        );
    }

    #[test]
    fn special_characters_and_edge_spaces_are_escaped() {
        let der = certificate(|name| {
            name.push(rcgen::DnType::CommonName, " a,b+c=d\"e; ");
        });
        assert_eq!(
            subject_name(&der).as_deref(),
            Some(r#"CN=\ a\,b\+c\=d\"e\;\ "#)
        );
    }

    #[test]
    fn attributes_without_an_rfc2253_keyword_are_hex() {
        // emailAddress, an IA5String: Java prints 1.2.840.113549.1.9.1=#16<len><bytes>.
        let der = certificate(|name| {
            name.push(
                rcgen::DnType::CustomDnType(vec![1, 2, 840, 113549, 1, 9, 1]),
                rcgen::DnValue::Ia5String("a@b".try_into().expect("ia5")),
            );
            name.push(rcgen::DnType::CommonName, "x");
        });
        assert_eq!(
            subject_name(&der).as_deref(),
            Some("CN=x,1.2.840.113549.1.9.1=#1603614062")
        );
    }

    #[test]
    fn acl_ids_must_look_like_names() {
        assert!(is_distinguished_name("CN=client,O=Paddock"));
        assert!(is_distinguished_name(r"CN=a\,b"));
        assert!(!is_distinguished_name("client"));
        assert!(!is_distinguished_name("CN=a,"));
        assert!(!is_distinguished_name(""));
    }
}
