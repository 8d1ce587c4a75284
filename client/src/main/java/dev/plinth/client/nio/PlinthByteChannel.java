package dev.plinth.client.nio;

import dev.plinth.client.PlinthFile;
import dev.plinth.common.PlinthException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.NonReadableChannelException;
import java.nio.channels.NonWritableChannelException;
import java.nio.channels.SeekableByteChannel;

/** A SeekableByteChannel over an open {@link PlinthFile}; APPEND writes at the end. Not thread-safe. */
final class PlinthByteChannel implements SeekableByteChannel {
    private final PlinthFile file;
    private final boolean readable;
    private final boolean writable;
    private final boolean append;
    private long position;
    private boolean open = true;

    PlinthByteChannel(PlinthFile file, boolean readable, boolean writable, boolean append) {
        this.file = file;
        this.readable = readable;
        this.writable = writable;
        this.append = append;
    }

    private void checkOpen() throws ClosedChannelException {
        if (!open) {
            throw new ClosedChannelException();
        }
    }

    @Override
    public int read(ByteBuffer target) throws IOException {
        checkOpen();
        if (!readable) {
            throw new NonReadableChannelException();
        }
        try {
            int read = file.read(position, target);
            if (read > 0) {
                position += read;
            }
            return read;
        } catch (PlinthException e) {
            throw Exceptions.toIOException(e, null);
        }
    }

    @Override
    public int write(ByteBuffer source) throws IOException {
        checkOpen();
        if (!writable) {
            throw new NonWritableChannelException();
        }
        try {
            if (append) {
                position = file.size();
            }
            int written = file.write(position, source);
            position += written;
            return written;
        } catch (PlinthException e) {
            throw Exceptions.toIOException(e, null);
        }
    }

    @Override
    public long position() throws IOException {
        checkOpen();
        return position;
    }

    @Override
    public SeekableByteChannel position(long newPosition) throws IOException {
        checkOpen();
        if (newPosition < 0) {
            throw new IllegalArgumentException("negative position");
        }
        position = newPosition;
        return this;
    }

    @Override
    public long size() throws IOException {
        checkOpen();
        return file.size();
    }

    @Override
    public SeekableByteChannel truncate(long size) throws IOException {
        checkOpen();
        if (!writable) {
            throw new NonWritableChannelException();
        }
        try {
            if (size < file.size()) {
                file.truncate(size);
            }
        } catch (PlinthException e) {
            throw Exceptions.toIOException(e, null);
        }
        position = Math.min(position, size);
        return this;
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    @Override
    public void close() throws IOException {
        if (open) {
            open = false;
            try {
                file.close();
            } catch (PlinthException e) {
                throw Exceptions.toIOException(e, null);
            }
        }
    }
}
