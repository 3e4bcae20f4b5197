//! Provisioning: images in every format, installers and their answer files, cloud-init, networks,
//! day-two lifecycle.

mod answer_validators;
mod cloudinit;
mod formats;
mod image;
mod installer;
mod lifecycle;
mod network;
