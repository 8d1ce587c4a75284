package dev.plinth.datasets;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * POSIX tar as shards need it: ustar headers, with a pax extended header before a member whose
 * name does not fit ustar (over 100 bytes that cannot be split at a '/' into prefix and name, or
 * not ASCII) or whose size does not (8 GiB or more). What GNU tar, Python's tarfile and the
 * webdataset library all read. Only regular files are written; the reader skips other types.
 */
public final class Tar {
    private Tar() {}

    public static final int BLOCK = 512;
    private static final long USTAR_SIZE_MAX = 077777777777L;

    /** The bytes of the header (one or three blocks with a pax header) that precede a member's data. */
    public static byte[] header(String name, long size, int mode, long mtimeSeconds) {
        byte[] ustarName = name.getBytes(StandardCharsets.UTF_8);
        String prefix = "";
        String shortName = name;
        boolean ascii = ustarName.length == name.length();
        boolean fits = ascii && ustarName.length <= 100;
        if (ascii && !fits && ustarName.length <= 256) {
            for (int cut = name.indexOf('/'); cut > 0; cut = name.indexOf('/', cut + 1)) {
                int rest = name.length() - cut - 1;
                if (cut <= 155 && rest > 0 && rest <= 100) {
                    prefix = name.substring(0, cut);
                    shortName = name.substring(cut + 1);
                    fits = true;
                    break;
                }
            }
        }
        boolean bigSize = size > USTAR_SIZE_MAX;
        if (fits && !bigSize) {
            return ustar(shortName, prefix, size, mode, mtimeSeconds, (byte) '0');
        }
        Map<String, String> records = new LinkedHashMap<>();
        if (!fits) {
            records.put("path", name);
            shortName = asciiStandIn(name);
            prefix = "";
        }
        if (bigSize) {
            records.put("size", Long.toString(size));
        }
        byte[] pax = paxRecords(records);
        byte[] paxHeader = ustar(asciiStandIn("PaxHeaders/" + shortName), "", pax.length, 0644, mtimeSeconds, (byte) 'x');
        byte[] member = ustar(shortName, prefix, bigSize ? 0 : size, mode, mtimeSeconds, (byte) '0');
        ByteBuffer out = ByteBuffer.allocate(paxHeader.length + (int) padded(pax.length) + member.length);
        out.put(paxHeader).put(pax).position(paxHeader.length + (int) padded(pax.length)).put(member);
        return out.array();
    }

    /** Two zero blocks: the end of an archive. */
    public static byte[] end() {
        return new byte[2 * BLOCK];
    }

    public static long padded(long size) {
        return (size + BLOCK - 1) / BLOCK * BLOCK;
    }

    private static String asciiStandIn(String name) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < name.length() && out.length() < 99; i++) {
            char c = name.charAt(i);
            out.append(c >= 0x20 && c < 0x7f ? c : '_');
        }
        return out.toString();
    }

    private static byte[] paxRecords(Map<String, String> records) {
        StringBuilder out = new StringBuilder();
        for (Map.Entry<String, String> record : records.entrySet()) {
            String body = " " + record.getKey() + "=" + record.getValue() + "\n";
            int bodyBytes = body.getBytes(StandardCharsets.UTF_8).length;
            int length = bodyBytes + 1;
            while (Integer.toString(length).length() + bodyBytes != length) {
                length = Integer.toString(length).length() + bodyBytes;
            }
            out.append(length).append(body);
        }
        return out.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] ustar(String name, String prefix, long size, int mode, long mtimeSeconds, byte type) {
        byte[] block = new byte[BLOCK];
        put(block, 0, 100, name.getBytes(StandardCharsets.US_ASCII));
        octal(block, 100, 8, mode & 07777);
        octal(block, 108, 8, 0);
        octal(block, 116, 8, 0);
        octal(block, 124, 12, size);
        octal(block, 136, 12, Math.max(0, Math.min(mtimeSeconds, USTAR_SIZE_MAX)));
        block[156] = type;
        put(block, 257, 6, "ustar\0".getBytes(StandardCharsets.US_ASCII));
        put(block, 263, 2, "00".getBytes(StandardCharsets.US_ASCII));
        put(block, 345, 155, prefix.getBytes(StandardCharsets.US_ASCII));
        for (int i = 148; i < 156; i++) {
            block[i] = ' ';
        }
        long sum = 0;
        for (byte b : block) {
            sum += b & 0xff;
        }
        String checksum = String.format("%06o", sum);
        put(block, 148, 6, checksum.getBytes(StandardCharsets.US_ASCII));
        block[154] = 0;
        block[155] = ' ';
        return block;
    }

    private static void put(byte[] block, int offset, int length, byte[] value) {
        System.arraycopy(value, 0, block, offset, Math.min(length, value.length));
    }

    private static void octal(byte[] block, int offset, int length, long value) {
        String digits = Long.toOctalString(value);
        String padded = "0".repeat(Math.max(0, length - 1 - digits.length())) + digits;
        put(block, offset, length - 1, padded.getBytes(StandardCharsets.US_ASCII));
    }

    // ---- reading

    /** A member as read: its name, where its data starts in the archive, and its size. */
    public record Member(String name, long dataOffset, long size, char type) {
        public boolean regularFile() {
            return type == '0' || type == 0;
        }
    }

    /**
     * Reads an archive from a stream, member by member: {@link #next} returns the next member's
     * header, and the caller reads exactly {@code size} bytes of data from {@link #data} (or
     * not: the reader skips what is left). Malformed input is an INVALID_ARGUMENT that says where.
     */
    public static final class Reader {
        private final InputStream in;
        private final String source;
        private long position;
        private long dataLeft;
        private long padding;

        public Reader(InputStream in, String source) {
            this.in = in;
            this.source = source;
        }

        /** The next regular file, or null at the end of the archive. */
        public Member next() throws IOException {
            skip(dataLeft + padding);
            dataLeft = 0;
            padding = 0;
            Map<String, String> pax = new LinkedHashMap<>();
            String longName = null;
            while (true) {
                long headerAt = position;
                byte[] block = readBlock();
                if (block == null || allZero(block)) {
                    return null;
                }
                if (!checksumMatches(block)) {
                    throw malformed("bad header checksum at offset " + headerAt);
                }
                char type = (char) block[156];
                long size = number(block, 124, 12, headerAt);
                String name = string(block, 0, 100);
                String prefix = string(block, 345, 155);
                if (!prefix.isEmpty() && "ustar".equals(string(block, 257, 5))) {
                    name = prefix + "/" + name;
                }
                if (type == 'x' || type == 'g' || type == 'L') {
                    byte[] data = readFully(size);
                    skip(padded(size) - size);
                    if (type == 'x') {
                        pax.putAll(parsePax(data, headerAt));
                    } else if (type == 'L') {
                        longName = new String(data, StandardCharsets.UTF_8).replaceAll("\0+$", "");
                    }
                    continue;
                }
                if (pax.containsKey("path")) {
                    name = pax.get("path");
                } else if (longName != null) {
                    name = longName;
                }
                if (pax.containsKey("size")) {
                    try {
                        size = Long.parseLong(pax.get("size"));
                    } catch (NumberFormatException e) {
                        throw malformed("bad pax size at offset " + headerAt);
                    }
                }
                Member member = new Member(name, position, size, type);
                dataLeft = size;
                padding = padded(size) - size;
                if (!member.regularFile()) {
                    skip(dataLeft + padding);
                    dataLeft = 0;
                    padding = 0;
                    pax.clear();
                    longName = null;
                    continue;
                }
                return member;
            }
        }

        /** Reads up to {@code length} bytes of the current member's data; -1 at its end. */
        public int read(byte[] buffer, int offset, int length) throws IOException {
            if (dataLeft == 0) {
                return -1;
            }
            int read = in.read(buffer, offset, (int) Math.min(length, dataLeft));
            if (read < 0) {
                throw new EOFException(source + ": archive ends inside a member");
            }
            dataLeft -= read;
            position += read;
            return read;
        }

        /** The current member's whole data (members of samples are small; the caller checks the size first). */
        public byte[] readData() throws IOException {
            if (dataLeft > Integer.MAX_VALUE - 16) {
                throw new PlinthException(ErrorCode.FILE_TOO_LARGE, source + ": member of " + dataLeft + " bytes read whole");
            }
            byte[] data = readFully(dataLeft);
            dataLeft = 0;
            return data;
        }

        private byte[] readFully(long size) throws IOException {
            byte[] data = new byte[(int) size];
            int done = 0;
            while (done < data.length) {
                int read = in.read(data, done, data.length - done);
                if (read < 0) {
                    throw new EOFException(source + ": archive ends inside a member");
                }
                done += read;
            }
            position += size;
            return data;
        }

        private byte[] readBlock() throws IOException {
            byte[] block = new byte[BLOCK];
            int done = 0;
            while (done < BLOCK) {
                int read = in.read(block, done, BLOCK - done);
                if (read < 0) {
                    if (done == 0) {
                        return null; // an archive without its end blocks: what is there is read
                    }
                    throw new EOFException(source + ": archive ends inside a header");
                }
                done += read;
            }
            position += BLOCK;
            return block;
        }

        private void skip(long bytes) throws IOException {
            long left = bytes;
            while (left > 0) {
                long skipped = in.skip(left);
                if (skipped <= 0) {
                    if (in.read() < 0) {
                        throw new EOFException(source + ": archive ends inside a member");
                    }
                    skipped = 1;
                }
                left -= skipped;
            }
            position += bytes;
        }

        private PlinthException malformed(String what) {
            return new PlinthException(ErrorCode.INVALID_ARGUMENT, source + ": not a tar archive: " + what);
        }

        private long number(byte[] block, int offset, int length, long headerAt) {
            if ((block[offset] & 0x80) != 0) { // GNU base-256 for large values
                long value = block[offset] & 0x7f;
                for (int i = offset + 1; i < offset + length; i++) {
                    value = (value << 8) | (block[i] & 0xff);
                }
                return value;
            }
            String text = string(block, offset, length).trim();
            if (text.isEmpty()) {
                return 0;
            }
            try {
                return Long.parseLong(text, 8);
            } catch (NumberFormatException e) {
                throw malformed("bad number '" + text + "' in the header at offset " + headerAt);
            }
        }

        private Map<String, String> parsePax(byte[] data, long headerAt) {
            Map<String, String> records = new LinkedHashMap<>();
            int at = 0;
            while (at < data.length) {
                int space = at;
                while (space < data.length && data[space] != ' ') {
                    space++;
                }
                int length;
                try {
                    length = Integer.parseInt(new String(data, at, space - at, StandardCharsets.US_ASCII));
                } catch (NumberFormatException e) {
                    throw malformed("bad pax record at offset " + headerAt);
                }
                if (length <= space - at || at + length > data.length) {
                    throw malformed("bad pax record length at offset " + headerAt);
                }
                String record = new String(data, space + 1, at + length - space - 2, StandardCharsets.UTF_8);
                int equals = record.indexOf('=');
                if (equals > 0) {
                    records.put(record.substring(0, equals), record.substring(equals + 1));
                }
                at += length;
            }
            return records;
        }
    }

    private static boolean allZero(byte[] block) {
        for (byte b : block) {
            if (b != 0) {
                return false;
            }
        }
        return true;
    }

    private static boolean checksumMatches(byte[] block) {
        long sum = 0;
        for (int i = 0; i < BLOCK; i++) {
            sum += (i >= 148 && i < 156) ? ' ' : (block[i] & 0xff);
        }
        String stored = string(block, 148, 8).trim();
        try {
            return !stored.isEmpty() && Long.parseLong(stored, 8) == sum;
        } catch (NumberFormatException e) {
            return false;
        }
    }

    private static String string(byte[] block, int offset, int length) {
        int end = offset;
        while (end < offset + length && block[end] != 0) {
            end++;
        }
        return new String(block, offset, end - offset, StandardCharsets.UTF_8);
    }
}
