//! Property tests of the DHCP parser: random datagrams, and valid client messages with their
//! bytes flipped, cut short or spliced with random option TLVs. `parse` must answer every one
//! (a request or a reason) without panicking, and whatever passes `check_framing` must decode
//! in dhcproto without reaching `parse`'s panic guard: the guard is for bugs, not for inputs.

use proptest::prelude::*;

use super::tests::client_msg;
use super::*;

/// A valid client message of any kind, with or without PXE options and a user class.
fn valid() -> impl Strategy<Value = Vec<u8>> {
    let kinds = prop_oneof![
        Just(MessageType::Discover),
        Just(MessageType::Request),
        Just(MessageType::Inform),
        Just(MessageType::Release),
        Just(MessageType::Decline),
    ];
    (kinds, any::<[u8; 6]>(), proptest::option::of(0u16..12), proptest::option::of(Just(b"iPXE".to_vec())))
        .prop_map(|(kind, mac, arch, uc)| client_msg(kind, mac, arch, uc.as_deref()))
}

/// A valid message, then damage: byte changes anywhere, a cut, random options before END.
fn damaged() -> impl Strategy<Value = Vec<u8>> {
    (
        valid(),
        proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        proptest::option::of(any::<prop::sample::Index>()),
        proptest::collection::vec((any::<u8>(), proptest::collection::vec(any::<u8>(), 0..40)), 0..4),
    )
        .prop_map(|(mut buf, flips, cut, extra)| {
            // Options go before the END byte (the last one dhcproto writes).
            let end = buf.len() - 1;
            let mut tail = Vec::new();
            for (code, body) in extra {
                tail.push(code);
                tail.push(body.len() as u8);
                tail.extend(body);
            }
            buf.splice(end..end, tail);
            for (at, byte) in flips {
                let i = at.index(buf.len());
                buf[i] = byte;
            }
            if let Some(c) = cut {
                buf.truncate(c.index(buf.len() + 1));
            }
            buf
        })
}

/// Decodes as `parse` does, but without the panic guard: a panic fails the property.
fn decodes_unguarded(buf: &[u8]) {
    if check_framing(buf).is_ok() {
        let _ = Message::decode(&mut Decoder::new(buf));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_datagrams_are_answered_not_panicked_on(buf in proptest::collection::vec(any::<u8>(), 0..700)) {
        decodes_unguarded(&buf);
        let _ = parse(&buf);
    }

    #[test]
    fn random_bytes_after_a_valid_header_are_answered(
        head in valid(),
        rest in proptest::collection::vec(any::<u8>(), 0..400),
    ) {
        let mut buf = head[..HEADER_LEN].to_vec();
        buf.extend(rest);
        decodes_unguarded(&buf);
        let _ = parse(&buf);
    }

    #[test]
    fn damaged_client_messages_are_answered_not_panicked_on(buf in damaged()) {
        decodes_unguarded(&buf);
        let _ = parse(&buf);
    }

    #[test]
    fn valid_client_messages_parse_to_what_was_sent(
        mac in any::<[u8; 6]>(),
        arch in proptest::option::of(0u16..12),
        ipxe in any::<bool>(),
    ) {
        let buf = client_msg(MessageType::Discover, mac, arch, ipxe.then_some(b"iPXE".as_slice()));
        let r = parse(&buf).unwrap();
        prop_assert_eq!(r.mac, Mac::from_slice(&mac).unwrap());
        prop_assert_eq!(r.kind, MessageType::Discover);
        prop_assert_eq!(r.is_pxe, arch.is_some());
        prop_assert_eq!(r.is_ipxe, ipxe);
    }
}
