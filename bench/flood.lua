-- wrk: a boot-script flood with made-up MACs (bench/store.sh part 1b).
math.randomseed(os.time())
request = function()
  local mac = string.format("52:54:%02x:%02x:%02x:%02x", math.random(0, 255), math.random(0, 255),
    math.random(0, 255), math.random(0, 255))
  return wrk.format("GET", "/boot/ipxe?mac=" .. mac .. "&platform=pcbios")
end
