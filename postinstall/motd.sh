#!/bin/sh
# Example post-install script: runs on the installed system through its agent.
# The appliance passes RACKBOOT_HOSTNAME and RACKBOOT_TASK in the environment.
set -eu
echo "Provisioned by rackboot (task ${RACKBOOT_TASK:-?}) as ${RACKBOOT_HOSTNAME:-$(hostname)}" > /etc/motd.rackboot
echo "post-install: motd written"
