package dev.plinth.gateway;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import javax.xml.XMLConstants;
import javax.xml.parsers.DocumentBuilder;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.parsers.ParserConfigurationException;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.xml.sax.SAXException;

/** Writing S3's XML answers, and parsing request bodies safely (no DTDs, no external entities, bounded size). */
final class Xml {
    static final String HEADER = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    static final String NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/";
    static final int BODY_BYTES_MAX = 2 << 20;

    private final StringBuilder out = new StringBuilder(256).append(HEADER);

    static Xml document(String root) {
        Xml xml = new Xml();
        xml.out.append('<').append(root).append(" xmlns=\"").append(NAMESPACE).append("\">");
        return xml;
    }

    Xml open(String name) {
        out.append('<').append(name).append('>');
        return this;
    }

    Xml close(String name) {
        out.append("</").append(name).append('>');
        return this;
    }

    /** Markup written as given: the caller's own constant text (an element with attributes), never input. */
    Xml markup(String markup) {
        out.append(markup);
        return this;
    }

    Xml element(String name, Object value) {
        out.append('<').append(name).append('>');
        escape(String.valueOf(value));
        out.append("</").append(name).append('>');
        return this;
    }

    String end(String root) {
        return out.append("</").append(root).append('>').toString();
    }

    private void escape(String value) {
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '<' -> out.append("&lt;");
                case '>' -> out.append("&gt;");
                case '&' -> out.append("&amp;");
                case '"' -> out.append("&quot;");
                case '\'' -> out.append("&apos;");
                default -> {
                    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
                        out.append("&#").append((int) c).append(';');
                    } else {
                        out.append(c);
                    }
                }
            }
        }
    }

    static String error(String code, String message, String resource, String requestId) {
        Xml xml = new Xml();
        xml.out.append("<Error>");
        xml.element("Code", code).element("Message", message == null ? "" : message).element("Resource", resource)
                .element("RequestId", requestId);
        return xml.end("Error");
    }

    /** Reads a bounded XML request body and parses it; malformed or oversized bodies are MalformedXML. */
    static Element parse(InputStream body) {
        byte[] bytes;
        try {
            bytes = body.readNBytes(BODY_BYTES_MAX + 1);
        } catch (IOException e) {
            throw new S3Exception(S3Error.INCOMPLETE_BODY, "cannot read the request body: " + e.getMessage());
        }
        if (bytes.length > BODY_BYTES_MAX) {
            throw new S3Exception(S3Error.MALFORMED_XML, "the XML body is larger than " + BODY_BYTES_MAX + " bytes");
        }
        try {
            DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
            factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
            factory.setFeature(XMLConstants.FEATURE_SECURE_PROCESSING, true);
            factory.setXIncludeAware(false);
            factory.setExpandEntityReferences(false);
            factory.setNamespaceAware(true);
            DocumentBuilder builder = factory.newDocumentBuilder();
            builder.setErrorHandler(null);
            Document document = builder.parse(new ByteArrayInputStream(bytes));
            return document.getDocumentElement();
        } catch (ParserConfigurationException | SAXException | IOException e) {
            throw new S3Exception(S3Error.MALFORMED_XML, "the XML body is not well-formed: " + e.getMessage());
        }
    }

    static List<Element> children(Element parent, String localName) {
        List<Element> result = new ArrayList<>();
        for (Node node = parent.getFirstChild(); node != null; node = node.getNextSibling()) {
            if (node instanceof Element element && localName.equals(element.getLocalName())) {
                result.add(element);
            }
        }
        return result;
    }

    /** The text of the first child element so named, without the white space around it; null if there is none. */
    static String childText(Element parent, String localName) {
        String text = childTextExact(parent, localName);
        return text == null ? null : text.strip();
    }

    /** The text of the first child element so named, exactly as sent: for keys, whose spaces are part of them. */
    static String childTextExact(Element parent, String localName) {
        List<Element> found = children(parent, localName);
        return found.isEmpty() ? null : found.getFirst().getTextContent();
    }
}
