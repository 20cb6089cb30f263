-- Wireshark dissector for nicemu packet captures (`nicemu run --pcap DIR`).
--
--   tshark -r DIR/link-node0-switch0.p0.pcap -X lua_script:tools/wireshark/nicemu.lua -V
--   wireshark -X lua_script:tools/wireshark/nicemu.lua DIR/link-node0-switch0.p0.pcap
--
-- or copy this file into Wireshark's personal Lua plugins folder. A record
-- (link type USER0, 147) is a 28-byte pseudo-header (24 bytes in version 1,
-- which had no destination), then the frame as it
-- crossed the cable: the route bytes still ahead of it, the payload, and the
-- payload's CRC-32 (zlib), little-endian. An NI Active Messages payload
-- (emulator/contracts/nicemu/niam_protocol.h) is decoded further. DIMMnet-1
-- links (link type USER1, 148) carry RHiNET packets behind the same
-- pseudo-header, with no route bytes: their header is decoded
-- (emulator/contracts/nicemu/martini.h). The format is in
-- docs/profiling.md, "Packet captures".

-- By pseudo-header version.
local PSEUDO_HEADER_BYTES = { [1] = 24, [2] = 28 }
local UNKNOWN_NODE = 0xFFFFFFFF
local CRC_BYTES = 4
local NIAM_TAG = 0x4D41494E -- "NIAM" in memory order
local NIAM_PACKET_BYTES = 32

-- emulator/contracts/nicemu/niam_protocol.h, enum niam_handler (a test
-- checks the two agree).
local handler_names = {
  [0] = "NIAM_H_NOP",
  [1] = "NIAM_H_ROUND",
  [2] = "NIAM_H_FOLD_IN",
  [3] = "NIAM_H_FOLD_OUT",
  [4] = "NIAM_H_COLLECTIVE",
  [5] = "NIAM_H_MAP",
  [6] = "NIAM_H_BCOPY",
  [7] = "NIAM_H_SYNC",
  [8] = "NIAM_H_FORWARD",
  [9] = "NIAM_H_DATA",
  [10] = "NIAM_H_ACK",
  [11] = "NIAM_H_HOST_SEND",
  [12] = "NIAM_H_HOST_AM",
  [13] = "NIAM_H_HOST_MSG",
  [14] = "NIAM_H_RING",
}

-- What the arguments mean, for the handlers niam_protocol.h describes.
local bcopy_args = { "source address", "destination address", "bytes",
                     "destination | issuer << 16", "flag address | notify",
                     "flag value" }
local argument_names = {
  [1] = { "c", "round", "value" },
  [2] = { "c", "value" },
  [3] = { "c", "result" },
  [8] = bcopy_args,
  [9] = { "chunk address", "transfer address", "transfer bytes",
          "issuer | flags", "flag address | notify", "flag value" },
  [10] = { "status" },
}

local directions = {
  [0] = "first end to second end (file name order)",
  [1] = "second end to first end",
}

-- Bit operations: Lua 5.2's bit32, else Wireshark's BitOp library. BitOp
-- results may be negative; `% 2^32` makes them unsigned.
local bitlib = bit32 or bit
local band, bxor, rshift = bitlib.band, bitlib.bxor, bitlib.rshift
local TWO_32 = 4294967296

local crc_table = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do
    if band(c, 1) ~= 0 then
      c = bxor(0xEDB88320, rshift(c, 1))
    else
      c = rshift(c, 1)
    end
  end
  crc_table[i] = c
end

-- zlib's CRC-32 of a ByteArray.
local function crc32(bytes)
  local crc = 0xFFFFFFFF
  for i = 0, bytes:len() - 1 do
    crc = bxor(crc_table[band(bxor(crc, bytes:get_index(i)), 0xFF)],
               rshift(crc, 8))
  end
  return bxor(crc, 0xFFFFFFFF) % TWO_32
end

-- ---- The link record ------------------------------------------------------

local nicemu = Proto("nicemu", "nicemu link record")
local f = nicemu.fields
f.version = ProtoField.uint8("nicemu.version", "Pseudo-header version")
f.direction = ProtoField.uint8("nicemu.direction", "Direction", base.DEC,
                               directions)
f.route_len = ProtoField.uint16("nicemu.route_len", "Route bytes")
f.source = ProtoField.uint32("nicemu.source", "Source node")
f.packet_id = ProtoField.uint64("nicemu.packet_id", "Packet id", base.HEX)
f.cable_ps = ProtoField.uint64("nicemu.cable_ps",
                               "Time on the cable, head in to tail out (ps)")
f.destination = ProtoField.uint32("nicemu.destination",
                                  "Destination node (where the route leads)")
f.route = ProtoField.bytes("nicemu.route", "Route")
f.route_port = ProtoField.uint8("nicemu.route.port", "Output port")
f.payload_len = ProtoField.uint32("nicemu.payload_len", "Payload bytes")
f.payload = ProtoField.bytes("nicemu.payload", "Payload")
f.crc = ProtoField.uint32("nicemu.crc", "CRC-32", base.HEX)
f.crc_good = ProtoField.bool("nicemu.crc_good", "CRC-32 correct")

local ef_short = ProtoExpert.new("nicemu.short", "Record too short",
                                 expert.group.MALFORMED, expert.severity.ERROR)
local ef_version = ProtoExpert.new("nicemu.version.unknown",
                                   "Unknown pseudo-header version",
                                   expert.group.MALFORMED,
                                   expert.severity.ERROR)
local ef_bad_crc = ProtoExpert.new("nicemu.crc.bad", "Bad CRC-32",
                                   expert.group.CHECKSUM,
                                   expert.severity.ERROR)
nicemu.experts = { ef_short, ef_version, ef_bad_crc }

-- ---- The NI Active Message -----------------------------------------------

local niam = Proto("niam", "NI Active Message")
local g = niam.fields
g.tag = ProtoField.uint32("niam.tag", "Tag", base.HEX)
g.handler = ProtoField.uint32("niam.handler", "Handler", base.DEC,
                              handler_names)
g.handler_name = ProtoField.string("niam.handler_name", "Handler name")
g.args = {}
for i = 0, 5 do
  g.args[i] = ProtoField.uint32("niam.arg" .. i, "Argument " .. i, base.HEX)
end
-- ProtoFields in a nested table are not registered: list them flat too.
for i = 0, 5 do
  g["arg" .. i] = g.args[i]
end
g.args = nil
g.bulk_len = ProtoField.uint32("niam.bulk_len", "Bulk data bytes")
g.bulk = ProtoField.bytes("niam.bulk", "Bulk data")

-- Decodes an AM in `range` (the payload without its CRC); returns the text
-- for the Info column.
local function dissect_niam(range, tree)
  local t = tree:add(niam, range)
  t:add_le(g.tag, range(0, 4))
  local handler = range(4, 4):le_uint()
  local name = handler_names[handler] or ("unknown handler " .. handler)
  t:add_le(g.handler, range(4, 4))
  t:add(g.handler_name, range(4, 4), name)
  local names = argument_names[handler] or {}
  local values = {}
  for i = 0, 5 do
    local item = t:add_le(g["arg" .. i], range(8 + 4 * i, 4))
    if names[i + 1] then
      item:append_text(" (" .. names[i + 1] .. ")")
    end
    values[#values + 1] = string.format("0x%x", range(8 + 4 * i, 4):le_uint())
  end
  local info = name .. " " .. table.concat(values, " ")
  local bulk = range:len() - NIAM_PACKET_BYTES
  if bulk > 0 then
    t:add(g.bulk_len, range(NIAM_PACKET_BYTES, bulk), bulk)
    t:add(g.bulk, range(NIAM_PACKET_BYTES, bulk))
    info = info .. string.format(" +%d bytes", bulk)
  end
  t:append_text(", " .. name)
  return info
end

-- ---- The DIMMnet-1 packet ---------------------------------------------------

-- emulator/contracts/nicemu/martini.h and dimmnet_protocol.h.
local dimmnet_commands = {
  [0] = "WRITE", [1] = "PUSH", [2] = "ACK", [3] = "PULL", [4] = "PULL_DATA",
  [0x10] = "ADD64 (firmware)", [0x11] = "INTERRUPT_WRITE (firmware)",
}
local dimmnet = Proto("dimmnet", "DIMMnet-1 packet")
local d = dimmnet.fields
d.flags = ProtoField.uint8("dimmnet.flags", "Flags", base.HEX)
d.aotf = ProtoField.bool("dimmnet.flags.aotf", "AOTF", 8, nil, 0x01)
d.skip = ProtoField.bool("dimmnet.flags.skip", "Address-translation skip", 8,
                         nil, 0x02)
d.status_flag = ProtoField.bool("dimmnet.flags.status",
                                "Receive-status address", 8, nil, 0x04)
d.last = ProtoField.bool("dimmnet.flags.last", "Last of a PUSH/PULL", 8, nil,
                         0x08)
d.command = ProtoField.uint8("dimmnet.command", "Command", base.HEX,
                             dimmnet_commands)
d.pgid = ProtoField.uint8("dimmnet.pgid", "Process group")
d.pid = ProtoField.uint8("dimmnet.pid", "Process")
d.region = ProtoField.uint8("dimmnet.region", "Receive region")
d.source = ProtoField.uint8("dimmnet.source", "Source node")
d.dest = ProtoField.uint16("dimmnet.dest", "Destination node")
d.address = ProtoField.uint32("dimmnet.address", "Remote address", base.HEX)
d.length = ProtoField.uint16("dimmnet.length", "Payload bytes")
d.status = ProtoField.uint32("dimmnet.status", "Receive-status address",
                             base.HEX)
d.data = ProtoField.bytes("dimmnet.data", "Data")
local ef_dimmnet_short = ProtoExpert.new("dimmnet.short",
                                         "Shorter than its header and length",
                                         expert.group.MALFORMED,
                                         expert.severity.ERROR)
dimmnet.experts = { ef_dimmnet_short }

-- Decodes a DIMMnet-1 packet in `range` (without its CRC); returns the text
-- for the Info column and the destination node (nil if too short).
local function dissect_dimmnet(range, tree)
  local t = tree:add(dimmnet, range)
  if range:len() < 16 then
    t:add_proto_expert_info(ef_dimmnet_short)
    return "short DIMMnet packet"
  end
  local flags = range(0, 1):uint()
  local header = band(flags, 0x04) ~= 0 and 24 or 16
  local ft = t:add(d.flags, range(0, 1))
  ft:add(d.aotf, range(0, 1))
  ft:add(d.skip, range(0, 1))
  ft:add(d.status_flag, range(0, 1))
  ft:add(d.last, range(0, 1))
  t:add(d.command, range(1, 1))
  t:add(d.pgid, range(2, 1))
  t:add(d.pid, range(3, 1))
  t:add(d.region, range(4, 1))
  t:add(d.source, range(5, 1))
  t:add_le(d.dest, range(6, 2))
  t:add_le(d.address, range(8, 4))
  t:add_le(d.length, range(12, 2))
  local length = range(12, 2):le_uint()
  if range:len() < header + length then
    t:add_proto_expert_info(ef_dimmnet_short)
    return "short DIMMnet packet"
  end
  if header == 24 then
    t:add_le(d.status, range(16, 4))
  end
  if length > 0 then
    t:add(d.data, range(header, length))
  end
  local command = range(1, 1):uint()
  local name = dimmnet_commands[command] or string.format("0x%02x", command)
  local info = string.format("%s%s to node %d region %d address 0x%x, %d bytes",
                             band(flags, 0x01) ~= 0 and "AOTF " or "", name,
                             range(6, 2):le_uint(), range(4, 1):uint(),
                             range(8, 4):le_uint(), length)
  t:append_text(", " .. name)
  return info, range(6, 2):le_uint()
end

local function is_niam(range)
  return range:len() >= NIAM_PACKET_BYTES and
         range(0, 4):le_uint() == NIAM_TAG
end

-- ---- The reliable mode's link header (niam_reliable.img) -------------------

-- niam_protocol.h, "The reliable mode": 8 bytes before the AM, or alone.
local NIAM_REL_BYTES = 8
local rel_flag_names = { [1] = "ACK_ONLY", [2] = "UNNUMBERED", [4] = "NACK" }
local niam_rel = Proto("niam_rel", "NI-AM reliable link header")
local r = niam_rel.fields
r.source = ProtoField.uint16("niam_rel.source", "Source node")
r.seq = ProtoField.uint16("niam_rel.seq", "Sequence number")
r.ack = ProtoField.uint16("niam_rel.ack", "Acknowledgement (next expected)")
r.flags = ProtoField.uint16("niam_rel.flags", "Flags", base.HEX)

local function is_niam_reliable(range)
  local n = range:len()
  if n == NIAM_REL_BYTES then -- an acknowledgement alone
    return band(range(6, 2):le_uint(), 1) ~= 0
  end
  return n >= NIAM_REL_BYTES + NIAM_PACKET_BYTES and
         range(NIAM_REL_BYTES, 4):le_uint() == NIAM_TAG
end

-- Decodes the link header, then the AM after it (if any).
local function dissect_niam_reliable(range, tree)
  local t = tree:add(niam_rel, range(0, NIAM_REL_BYTES))
  t:add_le(r.source, range(0, 2))
  t:add_le(r.seq, range(2, 2))
  t:add_le(r.ack, range(4, 2))
  local flags = range(6, 2):le_uint()
  local names = {}
  for bit, name in pairs(rel_flag_names) do
    if band(flags, bit) ~= 0 then
      names[#names + 1] = name
    end
  end
  table.sort(names)
  local flag_item = t:add_le(r.flags, range(6, 2))
  if #names > 0 then
    flag_item:append_text(" (" .. table.concat(names, ", ") .. ")")
  end
  local ack = range(4, 2):le_uint()
  if range:len() == NIAM_REL_BYTES then
    local nack = band(flags, 4) ~= 0 and "NACK" or "ACK"
    t:append_text(string.format(", %s %d", nack, ack))
    return string.format("%s %d from node %d", nack, ack,
                         range(0, 2):le_uint())
  end
  local seq = range(2, 2):le_uint()
  t:append_text(string.format(", seq %d ack %d", seq, ack))
  return string.format("seq %d ack %d ", seq, ack) ..
         dissect_niam(range(NIAM_REL_BYTES), tree)
end

-- A record of either link type: `rhinet` for DIMMnet-1's (USER1).
local function dissect_record(tvb, pinfo, tree, rhinet)
  pinfo.cols.protocol = "nicemu"
  local length = tvb:len()
  local t = tree:add(nicemu, tvb())
  if length < 1 then
    t:add_proto_expert_info(ef_short, "Shorter than the pseudo-header")
    return length
  end
  local version = tvb(0, 1):uint()
  local version_item = t:add(f.version, tvb(0, 1))
  local header_bytes = PSEUDO_HEADER_BYTES[version]
  if not header_bytes then
    version_item:add_proto_expert_info(ef_version)
    return length
  end
  if length < header_bytes then
    t:add_proto_expert_info(ef_short, "Shorter than the pseudo-header")
    return length
  end
  t:add(f.direction, tvb(1, 1))
  t:add_le(f.route_len, tvb(2, 2))
  t:add_le(f.source, tvb(4, 4))
  t:add_le(f.packet_id, tvb(8, 8))
  t:add_le(f.cable_ps, tvb(16, 8))
  local destination = nil
  if version >= 2 then
    t:add_le(f.destination, tvb(24, 4))
    destination = tvb(24, 4):le_uint()
    if destination == UNKNOWN_NODE then
      destination = nil
    end
  end
  local route_len = tvb(2, 2):le_uint()
  local source = tvb(4, 4):le_uint()
  local frame = length - header_bytes
  if frame < route_len + CRC_BYTES then
    t:add_proto_expert_info(ef_short, "Frame shorter than its route and CRC")
    return length
  end

  local at = header_bytes
  local ports = {}
  if route_len > 0 then
    local route = t:add(f.route, tvb(at, route_len))
    for i = 0, route_len - 1 do
      local port = tvb(at + i, 1):uint()
      route:add(f.route_port, tvb(at + i, 1)):prepend_text(
        "Switch " .. (i + 1) .. ": ")
      ports[#ports + 1] = tostring(port)
    end
    at = at + route_len
  end

  local payload_len = frame - route_len - CRC_BYTES
  local payload = payload_len > 0 and tvb(at, payload_len) or nil
  local crc_range = tvb(at + payload_len, CRC_BYTES)
  t:add(f.payload_len, payload or crc_range, payload_len):set_generated()
  local info
  if payload and rhinet then
    local header_destination
    info, header_destination = dissect_dimmnet(payload, tree)
    destination = header_destination or destination
    pinfo.cols.protocol = "DIMMnet"
  elseif payload and is_niam(payload) then
    info = dissect_niam(payload, tree)
    pinfo.cols.protocol = "NIAM"
  elseif payload and is_niam_reliable(payload) then
    info = dissect_niam_reliable(payload, tree)
    pinfo.cols.protocol = "NIAM"
  else
    if payload then
      t:add(f.payload, payload)
    end
    info = string.format("%d payload bytes", payload_len)
  end

  local carried = crc_range:le_uint()
  local computed = payload and crc32(payload:bytes()) or 0
  local crc_item = t:add_le(f.crc, crc_range)
  local good = carried == computed
  t:add(f.crc_good, crc_range, good):set_generated()
  if good then
    crc_item:append_text(" [correct]")
  else
    crc_item:add_proto_expert_info(ef_bad_crc, string.format(
      "Bad CRC-32 0x%08x (the payload's is 0x%08x)", carried, computed))
    info = info .. " [BAD CRC]"
  end

  pinfo.cols.src = "node " .. source
  if destination then
    pinfo.cols.dst = "node " .. destination
  end
  local route_text = #ports > 0 and
                     (" route " .. table.concat(ports, ",")) or ""
  pinfo.cols.info = info .. route_text
  return length
end

function nicemu.dissector(tvb, pinfo, tree)
  return dissect_record(tvb, pinfo, tree, false)
end

-- The same record on DIMMnet-1 links; its own name only for the table.
local nicemu_rhinet = Proto("nicemu_rhinet", "nicemu RHiNET link record")
function nicemu_rhinet.dissector(tvb, pinfo, tree)
  return dissect_record(tvb, pinfo, tree, true)
end

local encaps = wtap_encaps or wtap
DissectorTable.get("wtap_encap"):add(encaps.USER0, nicemu)
DissectorTable.get("wtap_encap"):add(encaps.USER1, nicemu_rhinet)

-- UZURA frames (the `uzura` card, docs/uzura.md): Ethernet II of type
-- 0x88B6 (IEEE 802 local experimental 2), then the card's 48-byte header
-- (emulator/contracts/nicemu/uzura_card.h, struct uz_wire_header), then the
-- data. Wireshark's Ethernet dissector hands them over by their type.
local UZ_ETHERTYPE = 0x88B6
local UZ_HEADER_BYTES = 48
local uz_type_names = {
  [1] = "EAGER",
  [2] = "PUT",
  [3] = "GET",
  [4] = "ACK",
  [5] = "NACK",
}
local uzura = Proto("uzura", "UZURA frame")
local eth_dst_field = Field.new("eth.dst")
local u = uzura.fields
u.type = ProtoField.uint8("uzura.type", "Type", base.DEC, uz_type_names)
u.flags = ProtoField.uint8("uzura.flags", "Flags", base.HEX)
u.last = ProtoField.bool("uzura.last", "Last frame of the message", 8, nil,
                         0x01)
u.answer = ProtoField.bool("uzura.answer", "Answer to a GET", 8, nil, 0x02)
u.src = ProtoField.uint16("uzura.src", "Source node")
u.dst = ProtoField.uint16("uzura.dst", "Destination node")
u.msg = ProtoField.uint32("uzura.msg", "Message")
u.len = ProtoField.uint32("uzura.len", "Message bytes")
u.offset = ProtoField.uint32("uzura.offset", "Offset")
u.addr = ProtoField.uint64("uzura.addr", "Remote address", base.HEX)
u.tag = ProtoField.uint32("uzura.tag", "Tag", base.HEX)
u.imm = ProtoField.uint32("uzura.imm", "Immediate", base.HEX)
u.type_id = ProtoField.uint16("uzura.type_id", "Remote datatype")
u.status = ProtoField.uint16("uzura.status", "Status")
u.data = ProtoField.bytes("uzura.data", "Data")

function uzura.dissector(tvb, pinfo, tree)
  if tvb:len() < UZ_HEADER_BYTES then
    return 0
  end
  pinfo.cols.protocol = "UZURA"
  local t = tree:add(uzura, tvb(0, UZ_HEADER_BYTES))
  local kind = tvb(0, 1):uint()
  t:add(u.type, tvb(0, 1))
  local flags = t:add(u.flags, tvb(1, 1))
  flags:add(u.last, tvb(1, 1))
  flags:add(u.answer, tvb(1, 1))
  t:add_le(u.src, tvb(2, 2))
  -- The Source and Destination columns are Ethernet's (MACs); the
  -- destination node is the one whose MAC the frame is sent to
  -- (02:4e:4d:00:hi:lo, emulator/fabric/ethernet.cpp).
  local to = ""
  local eth_dst = eth_dst_field()
  if eth_dst and eth_dst.len == 6 and eth_dst.range(0, 4):uint() == 0x024E4D00 then
    local node = eth_dst.range(4, 2):uint()
    t:add(u.dst, eth_dst.range(4, 2), node):set_generated()
    to = " to node " .. node
  end
  t:add_le(u.msg, tvb(4, 4))
  t:add_le(u.len, tvb(8, 4))
  t:add_le(u.offset, tvb(12, 4))
  t:add_le(u.addr, tvb(16, 8))
  t:add_le(u.tag, tvb(24, 4))
  t:add_le(u.imm, tvb(28, 4))
  t:add_le(u.type_id, tvb(32, 2))
  t:add_le(u.status, tvb(34, 2))
  local len, offset = tvb(8, 4):le_uint(), tvb(12, 4):le_uint()
  local data = math.min(len - offset, tvb:len() - UZ_HEADER_BYTES)
  if (kind == 1 or kind == 2) and data > 0 then
    t:add(u.data, tvb(UZ_HEADER_BYTES, data))
  end
  pinfo.cols.info = string.format("%s from node %d%s, message %d, %d of %d bytes at %d",
                                  uz_type_names[kind] or ("type " .. kind),
                                  tvb(2, 2):le_uint(), to, tvb(4, 4):le_uint(),
                                  math.max(data, 0), len, offset)
  return tvb:len()
end

DissectorTable.get("ethertype"):add(UZ_ETHERTYPE, uzura)
