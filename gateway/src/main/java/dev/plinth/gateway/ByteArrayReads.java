package dev.plinth.gateway;

import java.io.IOException;
import java.io.InputStream;

/** An input stream whose single-byte read goes through its array read, so filters see every byte once. */
abstract class ByteArrayReads extends InputStream {
    @Override
    public final int read() throws IOException {
        byte[] one = new byte[1];
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public abstract int read(byte[] buffer, int offset, int length) throws IOException;
}
