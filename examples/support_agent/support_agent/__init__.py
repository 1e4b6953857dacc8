"""A customer-service agent on LangChain v1 (``create_agent``) whose memory is
chatledger: the example the pytest plugin is shown on (see ../README.md).

``support_agent.agent``: the agent (``SupportAgent``, ``build_agent``);
``support_agent.tickets``: the stub services it works with;
``support_agent.chat_history``: the same agent on the chat-history path
LangChain deprecated, kept as the migration example. Nothing is imported
here, so a process running one of them loads only what that one needs.
"""
