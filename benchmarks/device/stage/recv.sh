#!/usr/bin/env bash
# On the device machine, one warm call per part: the part that travelled in the carried folder goes to /tmp/stage,
# outside the checkout, where it stays while the machine is warm.
D=${STAGE_DIR:-.stage}
mkdir -p /tmp/stage && cp "$D"/part-* /tmp/stage/ && ls /tmp/stage | wc -l && du -sh /tmp/stage | cut -f1
