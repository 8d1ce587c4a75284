package dev.plinth.hsm;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MgmtMessages.ArchiveInfo;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;

/** The archives mgmt lists, opened as stores on first use; an id not known yet refetches the list. */
public final class ArchiveCatalog implements AutoCloseable {
    private final PlinthClient client;
    private final long retryMillis;
    private final Map<Integer, Opened> opened = new HashMap<>();

    private record Opened(ArchiveInfo info, ObjectStore store) {}

    public ArchiveCatalog(PlinthClient client, long retryMillis) {
        this.client = client;
        this.retryMillis = retryMillis;
    }

    /** The store of archive {@code archiveId}; NOT_FOUND if mgmt lists none with that id. */
    public synchronized ObjectStore store(int archiveId) throws IOException {
        Opened known = opened.get(archiveId);
        ArchiveInfo info = client.archives().stream().filter(a -> a.archiveId() == archiveId).findFirst()
                .orElseThrow(() -> new PlinthException(ErrorCode.NOT_FOUND, "no archive " + archiveId + " (plinth archive list)"));
        if (known != null && known.info().equals(info)) {
            return known.store();
        }
        if (known != null) {
            known.store().close(); // the archive was removed and added again elsewhere
        }
        ObjectStore store;
        try {
            store = ArchiveUri.parse(info.uri()).open(retryMillis);
        } catch (IllegalArgumentException e) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "archive " + archiveId + ": " + e.getMessage());
        }
        opened.put(archiveId, new Opened(info, store));
        return store;
    }

    @Override
    public synchronized void close() {
        opened.values().forEach(o -> o.store().close());
        opened.clear();
    }
}
