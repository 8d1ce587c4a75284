package dev.plinth.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.common.Credentials;
import dev.plinth.common.InodeId;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.OpHeader;
import org.junit.jupiter.api.Test;

class MetaRouterTest {
    private static final OpHeader HEADER = new OpHeader(1, 1, Credentials.ROOT, 0);

    @Test
    void aRequestGoesToTheMdtOfTheInodeItActsOn() {
        long onTwo = InodeId.of(2, 77);
        long onFive = InodeId.of(5, 3);
        assertThat(MetaRouter.mdtOf(new MetaMessages.GetAttr(HEADER, onTwo))).isEqualTo(2);
        assertThat(MetaRouter.mdtOf(new MetaMessages.Lookup(HEADER, onFive, "x"))).as("a name: its directory's MDT").isEqualTo(5);
        assertThat(MetaRouter.mdtOf(new MetaMessages.Mkdir(HEADER, onTwo, "d", 0755))).isEqualTo(2);
        assertThat(MetaRouter.mdtOf(new MetaMessages.Rename(HEADER, onFive, "a", onTwo, "b", false))).as("the source's side").isEqualTo(5);
        assertThat(MetaRouter.mdtOf(new MetaMessages.Open(HEADER, onTwo, true))).isEqualTo(2);
        assertThat(MetaRouter.mdtOf(new MetaMessages.ResolvePath(HEADER, "/a/b", true))).as("paths start at the root").isZero();
        assertThat(MetaRouter.mdtOf(new MetaMessages.RenewSession(HEADER))).isZero();
    }
}
