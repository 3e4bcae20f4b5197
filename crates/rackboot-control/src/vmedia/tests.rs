use super::*;

#[test]
fn passwords_are_long_and_compared_in_constant_time() {
    let (a, b) = (random_password().unwrap(), random_password().unwrap());
    assert_eq!(a.len(), 32);
    assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
    assert_ne!(a, b);
    let sha = |p: &str| -> [u8; 32] { Sha256::digest(p.as_bytes()).into() };
    assert!(constant_eq(&sha(&a), &sha(&a)));
    assert!(!constant_eq(&sha(&a), &sha(&b)));
}
